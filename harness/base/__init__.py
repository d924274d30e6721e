"""The base modules every layer may use: errors, deadlines, paths, logging set-up, the lifeline."""
