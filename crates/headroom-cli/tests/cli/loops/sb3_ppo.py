# Stable-Baselines3's PPO shape: rollouts with the policy in eval mode (set_training_mode(False))
# called under no_grad, then epochs of minibatch updates through policy.evaluate_actions (its
# sub-networks, not its forward).
import argparse
import torch
from torch import nn
from own_timer import OwnTimer

p = argparse.ArgumentParser()
p.add_argument("--n-steps", type=int, default=256)
p.add_argument("--batch-size", type=int, default=64)
p.add_argument("--n-epochs", type=int, default=4)
p.add_argument("--iterations", type=int, default=8)
a = p.parse_args()
torch.manual_seed(0)
obs_dim, n_act, n_envs = 8, 4, 4


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp_extractor = nn.Sequential(nn.Linear(obs_dim, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh())
        self.action_net = nn.Linear(64, n_act)
        self.value_net = nn.Linear(64, 1)

    def set_training_mode(self, mode):
        self.train(mode)

    def forward(self, obs):
        h = self.mlp_extractor(obs)
        dist = torch.distributions.Categorical(logits=self.action_net(h))
        act = dist.sample()
        return act, self.value_net(h), dist.log_prob(act)

    def evaluate_actions(self, obs, actions):
        h = self.mlp_extractor(obs)
        dist = torch.distributions.Categorical(logits=self.action_net(h))
        return self.value_net(h), dist.log_prob(actions), dist.entropy()


policy = Policy()
opt = torch.optim.Adam(policy.parameters(), lr=3e-4)
timer = OwnTimer()
state = torch.randn(n_envs, obs_dim)
for it in range(a.iterations):
    policy.set_training_mode(False)
    buf_obs, buf_act, buf_logp, buf_val, buf_rew = [], [], [], [], []
    for s in range(a.n_steps):
        with torch.no_grad():
            act, val, logp = policy(state)
        buf_obs.append(state); buf_act.append(act); buf_logp.append(logp); buf_val.append(val.flatten())
        state = torch.tanh(state + 0.1 * torch.randn_like(state))
        buf_rew.append((act == 1).float())
    obs, acts, logps = torch.cat(buf_obs), torch.cat(buf_act), torch.cat(buf_logp)
    vals, rews = torch.cat(buf_val), torch.cat(buf_rew)
    adv, ret = rews - vals, rews
    policy.set_training_mode(True)
    total = obs.size(0)
    for epoch in range(a.n_epochs):
        idx = torch.randperm(total)
        for start in range(0, total, a.batch_size):
            i = idx[start:start + a.batch_size]
            v, lp, ent = policy.evaluate_actions(obs[i], acts[i])
            ratio = (lp - logps[i]).exp()
            loss = -torch.min(adv[i] * ratio, adv[i] * ratio.clamp(0.8, 1.2)).mean() + 0.5 * ((v.flatten() - ret[i]) ** 2).mean() - 0.01 * ent.mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            timer.iteration(i.numel())
    print(f"iteration {it}", flush=True)
timer.report()
