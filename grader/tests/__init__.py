"""The grader's own tests (pytest); run: python -m pytest grader"""
