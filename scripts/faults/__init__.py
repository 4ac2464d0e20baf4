"""The fault classes of `scripts/fault_campaign.py`, one module each (see tally.py)."""
