"""Score datasets of samples (HumanEval, MBPP, our own call-case format): per-sample rows, pass@k, run diffs,
sharding and merging. The samples go through the same static checks and case kinds as `gate score`."""
