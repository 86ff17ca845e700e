"""Running as the GitHub Action: inputs, the trust boundary, outputs, the action command."""
