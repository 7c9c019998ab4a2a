"""Scheduled jobs (SPEC §12): schedules, the store-backed tick, runs and their delivery."""
