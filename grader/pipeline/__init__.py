"""The grading pipeline, one module a stage, data flowing one way: collect (a class's uploads
into submissions), stage (a submission's files into a work folder), build (harness and
submission), run (the tests, on the engine), score (points and reasons) and report (feedback,
gradebooks, pages). grade strings the stages together for a class and for a student's own check
(docs/architecture.md).
"""
