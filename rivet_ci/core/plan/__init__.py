"""Config + facts -> plan:

strategy resolution, diagnostics, signals, scoring, recommendation, campaign, planner.
"""
