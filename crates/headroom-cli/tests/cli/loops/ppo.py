# CleanRL-PPO-shaped: rollouts of num_envs vectorised toy environments with the agent under
# no_grad (train mode), then update_epochs passes over the rollout in minibatches.
import argparse
import torch
from torch import nn
from own_timer import OwnTimer

p = argparse.ArgumentParser()
p.add_argument("--num-envs", type=int, default=8)
p.add_argument("--num-steps", type=int, default=64)
p.add_argument("--num-minibatches", type=int, default=4)
p.add_argument("--update-epochs", type=int, default=4)
p.add_argument("--total-timesteps", type=int, default=20000)
a = p.parse_args()
torch.manual_seed(0)
obs_dim, n_act = 8, 4


class Agent(nn.Module):
    def __init__(self):
        super().__init__()
        self.critic = nn.Sequential(nn.Linear(obs_dim, 64), nn.Tanh(), nn.Linear(64, 1))
        self.actor = nn.Sequential(nn.Linear(obs_dim, 64), nn.Tanh(), nn.Linear(64, n_act))

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        logits = self.actor(x)
        dist = torch.distributions.Categorical(logits=logits)
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(x)


agent = Agent()
opt = torch.optim.Adam(agent.parameters(), lr=2.5e-4, eps=1e-5)
batch = a.num_envs * a.num_steps
mb = batch // a.num_minibatches
iters = a.total_timesteps // batch
obs = torch.zeros(a.num_steps, a.num_envs, obs_dim)
acts = torch.zeros(a.num_steps, a.num_envs)
logps = torch.zeros(a.num_steps, a.num_envs)
rews = torch.zeros(a.num_steps, a.num_envs)
vals = torch.zeros(a.num_steps, a.num_envs)
state = torch.randn(a.num_envs, obs_dim)
timer = OwnTimer()
for it in range(iters):
    for s in range(a.num_steps):
        obs[s] = state
        with torch.no_grad():
            act, logp, _, v = agent.get_action_and_value(state)
        acts[s], logps[s], vals[s] = act, logp, v.flatten()
        state = torch.tanh(state + 0.1 * torch.randn_like(state))
        rews[s] = (act == 1).float()
    adv = rews - vals
    ret = adv + vals
    b_obs, b_acts, b_logps = obs.reshape(-1, obs_dim), acts.reshape(-1), logps.reshape(-1)
    b_adv, b_ret = adv.reshape(-1), ret.reshape(-1)
    for epoch in range(a.update_epochs):
        idx = torch.randperm(batch)
        for start in range(0, batch, mb):
            i = idx[start:start + mb]
            _, newlogp, ent, newv = agent.get_action_and_value(b_obs[i], b_acts[i].long())
            ratio = (newlogp - b_logps[i]).exp()
            pg = torch.max(-b_adv[i] * ratio, -b_adv[i] * ratio.clamp(0.8, 1.2)).mean()
            loss = pg - 0.01 * ent.mean() + 0.5 * ((newv.flatten() - b_ret[i]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
            opt.step()
            timer.iteration(mb)
    print(f"iteration {it} SPS-ish", flush=True)
timer.report()
