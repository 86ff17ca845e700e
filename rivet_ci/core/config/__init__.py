"""rivet's config:

the models of its schema, the YAML 1.2 reader, node typing, the rules, the loader.
"""
