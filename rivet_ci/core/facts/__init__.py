"""What is known about a source:

the facts file's models and loader, run history, the probe rules.
"""
