"""
Getting started: mean field of a tanh network
=============================================

The q-map and c-map of a fully connected tanh network, its fixed point, phase and depth scales,
the edge of chaos, and a check against finite random networks.
"""

# %%
# The fixed point and depth scales at one point of the (sigma_w2, sigma_b2) plane
# (Xiao et al. 2018 eq. 2.7; Schoenholz et al. 2017 eqs. 6-9).
import numpy as np

from meanfield import dense

fp = dense.fixed_point("tanh", sigma_w2=1.5, sigma_b2=0.05)
print(fp)

# %%
# The edge of chaos: the sigma_w2 at which chi_1 = 1, and the fixed point there.
sw_crit = dense.critical_sigma_w2("tanh", 0.05)
print(f"critical sigma_w2 = {sw_crit:.6f}")
print(dense.fixed_point("tanh", sw_crit, 0.05).chi_1)

# %%
# Propagate the covariance of three inputs through 20 layers.
x = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.5], [0.3, 0.3, 1.0]])
cov0 = dense.input_covariance(x, sigma_w2=1.5, sigma_b2=0.05)
covs = dense.propagate(cov0, "tanh", 1.5, 0.05, depth=20)
c = covs[:, 0, 1] / np.sqrt(covs[:, 0, 0] * covs[:, 1, 1])
print("correlation of inputs 0 and 1, layers 0, 5, 10, 20:", np.round(c[[0, 5, 10, 20]], 4))

# %%
# The same through finite random networks (width 512, 16 networks): the Monte-Carlo mean of the
# pre-activation covariance next to the theory.
from meanfield.simulate import simulate_dense

sim = simulate_dense(x, "tanh", 1.5, 0.05, depth=20, width=512, n_networks=16, rng=0)
mc = sim.cov.mean(axis=0)  # (depth + 1, D, D), index 0 = first layer as in dense.propagate
se = sim.cov.std(axis=0, ddof=1) / np.sqrt(sim.cov.shape[0])
for layer in (0, 5, 10, 20):
    print(
        f"layer {layer:2d}: q theory {covs[layer, 0, 0]:.4f}   Monte-Carlo {mc[layer, 0, 0]:.4f} +- {se[layer, 0, 0]:.4f}"
    )

# %%
# The q-map and c-map themselves, and a plot of the correlation over depth.
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(5, 3.2))
ax.plot(c, "k-", label="theory (dense.propagate)")
c_mc = mc[:, 0, 1] / np.sqrt(mc[:, 0, 0] * mc[:, 1, 1])
ax.plot(c_mc, "o", ms=3, label="512-wide networks (mean of 16)")
ax.set_xlabel("layer $l$")
ax.set_ylabel("correlation $c^l$ of inputs 0 and 1")
ax.set_title(r"tanh, $\sigma_w^2 = 1.5$, $\sigma_b^2 = 0.05$")
ax.legend()
