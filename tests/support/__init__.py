"""Test helpers (no tests here): throwaway database servers and seeded databases (`db_seed`),
the local fake GitHub (`fake_github`), real git repositories and the CLI (`pr`), the action's
environment (`action`). Test modules import from here, never from each other."""
