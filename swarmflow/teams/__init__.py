"""Team runs and the board: one long-lived session per role, threads and mentions, the board's
rules, view, journal and HTTP server.
"""
