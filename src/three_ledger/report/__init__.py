"""Records in, text out: the posture, the step summary, the JUnit verdict, findings."""
