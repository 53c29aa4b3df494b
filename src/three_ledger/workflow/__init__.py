"""What `gate`, `merge` and the demo share above a single run: the chain of steps, and the
files a decision is written to."""
