"""The answer: the verdict, its fixes and everything planned on top of it (wing 8; calls everything below).

- budget: Workload + Device -> Budget, the verdict per stage; report: an estimate as text
- planning: THE entry the node, the panel and the command line call (estimate, estimate_prompt -> Estimate:
  the Budget inside the fixes, cards, capacity, risk and evidence planned on top)
- advice: the remedy ladder; capacity: the largest batch / size / length that runs
- risk, evidence: the OOM risk beside the verdict, published outcomes, known regressions
- multi_device, placement_plan: several cards; wan_plan, video_plan: the video planners
- oom: reads an out-of-memory message and says what happened
"""
