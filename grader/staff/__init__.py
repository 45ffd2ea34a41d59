"""Staff tools built on the pipeline: validate (every mutant and variant graded as declared),
mutants (the sample class, from the reference and its declared edits), handout (the student kit
regenerated from solutions/), release, pages (the write-ups as web pages and PDFs) and bench
(the engine's own speed) (docs/architecture.md).
"""
