"""The toy scheduler of page 4, the teaching code the chapter prints, and what is built on it.

- scheduler.py: the toy itself, small enough to read in one sitting; the page includes
  its pieces and exercise 5's editor starts from a copy of it, so it holds the scheduler
  and nothing else;
- view.py: the page's widget (simulation `toy_scheduler`): the driver's results per policy;
- chunked.py: the toy with chunked prefill, pysim's own answer to exercise 5;
- self_victim.py: exercise 4's bug, a victim choice that may pick the requester.
"""
