"""`swarmflow view`: the runs and experiments of a folder as a live local web page.

A Starlette application served by uvicorn on the loopback (the `view` extra), with pages
rendered on the server from Jinja2 templates and one small script of its own that polls the
parts of a page that change. Runs are read through the report's log reader (and, once a run
has ended, the journal's reader); experiments through `swarmflow.experiments`.
"""
