"""Scheduling policies written as Python code: the interface, the built-in ones, a reader's.

The scheduling-policy lab (pysim.sims.policies, page 9) and its puzzles run the engine
(pysim.engine) with a policy that orders the waiting queue and picks whom to preempt:

- api.py: what a policy sees (read-only views of requests and of the engine) and the
  `Policy` the engine calls;
- builtin.py: the policies the page offers, written in that same interface, so the page
  can show their source as a reader's starting point;
- reader.py: a reader's own policy file, loaded and run under a budget of lines and
  seconds, its errors named by the line of their code.
"""
