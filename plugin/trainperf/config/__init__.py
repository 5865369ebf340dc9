"""Every option (flag, environment variable, ini key, marker) and its resolution into the session's
settings, with one precedence: command line > environment > ini > marker > default.

May import nothing of trainperf.
"""
