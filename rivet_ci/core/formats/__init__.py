"""Documents in and out:

rivet-ci-plan/1 (schema, writer, reader), the PR document, rivet's own artifact, pretty text.
"""
