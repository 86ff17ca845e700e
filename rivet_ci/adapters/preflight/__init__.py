"""Live preflight: facts about each export, observed on its real source database.

Entry point: :func:`rivet_ci.adapters.preflight.collect.collect_facts` with
:class:`rivet_ci.adapters.preflight.base.PreflightOptions` (also importable from ``collect``).
Modules: ``safety`` (query vetting, name checks, redaction), ``source_url`` (rivet's URL
resolution), ``postgres`` / ``mysql`` / ``sqlite`` (one read-only probe session per dialect),
``collect`` (orchestration). Run history lives in :mod:`rivet_ci.adapters.state_history`.

This package imports nothing on purpose: the state-history adapter shares its helpers, and an
eager re-export here would make the two import each other.
"""
