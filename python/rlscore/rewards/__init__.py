"""Reward functions with each trainer's own calling convention, scoring in process by default
(rlscore.Engine) or on a server (pass a rlscore.client.Client as `engine`).

    trl        RlscoreReward: a GRPOTrainer reward function (prompts, completions, **columns)
    open_r1    accuracy_reward, format_reward, tag_count_reward, get_repetition_penalty_reward
    verl       compute_score(data_source, solution_str, ground_truth, extra_info), and its batch
    openrlhf   reward_func(queries, prompts, labels) for --remote_rm_url
    slime      async rm(args, sample) and batched_rm(args, samples) for --custom-rm-path
"""
