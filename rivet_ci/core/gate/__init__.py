"""Base vs head: the diff, the gate policy, waivers."""
