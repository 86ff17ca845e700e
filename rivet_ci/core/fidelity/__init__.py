"""Type fidelity as rivet 0.32.2's `rivet check --type-report` computes it:

each result column of an export, from its source type, to rivet's type, its Arrow type, its
fidelity, what the export's format (Parquet, CSV) and a `--target` warehouse make of it, and
whether `--strict` refuses it. Pure: the column types come from the source catalog
(`core.facts.catalog_models`), captured by `rivet-ci facts` or live by `rivet-ci check --live`.
"""
