"""
Blumenfeld, Gilboa & Soudry 2020: feature symmetry, ConstNet, LeakyNet
======================================================================

Every figure of the paper, drawn at the smoke size; ``meanfield figures blumenfeld2020 --full`` draws
them at the paper's sizes.
"""

# sphinx_gallery_capture_repr = ()
from meanfield.figures import blumenfeld2020
from meanfield.figures.harness import show_figure as show

# %%
# ``blumenfeld2020.fig_1`` (analogue of Fig. 1 (digits, small network)): Test error against the number K of unique hidden features (width N = 64), lambda = 0, 0.1, 0.5.
show(blumenfeld2020.fig_1)

# %%
# ``blumenfeld2020.fig_3`` (analogue of Fig. 3 (digits, small ConstNet)): Forward and backward weight correlations C_f, C_b of one ConstNet convolution over training.
show(blumenfeld2020.fig_3)

# %%
# ``blumenfeld2020.fig_5`` (analogue of Fig. 5 (digits, small network)): Width-N network with K unique features (replicated N/K times) against a width-K network.
show(blumenfeld2020.fig_5)

# %%
# ``blumenfeld2020.fig_6`` (analogue of Fig. 6 (digits, small ConstNet)): ``1 - C_f``, ``1 - C_b``, ``1 - C_t`` of every convolution of a '0'-initialised ConstNet with dropout.
show(blumenfeld2020.fig_6)

# %%
# ``blumenfeld2020.fig_9`` (analogue of Fig. 9 (digits, small LeakyNet)): Forward symmetry-breaking perturbation ratio by layer during noisy training of LeakyNets.
show(blumenfeld2020.fig_9)

# %%
# ``blumenfeld2020.fig_10`` (analogue of Fig. 10 (digits, small LeakyNet)): Backward (gradient) symmetry-breaking perturbation ratio by layer during noisy training of LeakyNets.
show(blumenfeld2020.fig_10)

# %%
# ``blumenfeld2020.fig_12`` (analogue of Fig. 12 (digits, small LeakyNet)): App. J: LeakyNets whose 12 layers are all ``gamma I + (1 - gamma) 11^T / n``; loss and C_f per layer.
show(blumenfeld2020.fig_12)

# %%
# ``blumenfeld2020.table_correlations`` (not in the paper: closed forms after eq. 6): Closed-form forward / backward correlations C_f, C_b (after eq. 6) next to values measured on tensors.
show(blumenfeld2020.table_correlations)

# %%
# ``blumenfeld2020.table_1`` (analogue of Table 1): ConstNet test accuracy with and without a symmetry-breaking noise source.
show(blumenfeld2020.table_1)

# %%
# ``blumenfeld2020.table_2`` (analogue of Table 2 (digits, small LeakyNets, train_ensemble)): LeakyNets with 0 to 13 averaging layers and a He-initialised one: accuracy, max C_f, mean sqrt(1 - C_f^2).
show(blumenfeld2020.table_2)

# %%
# ``blumenfeld2020.table_3`` (analogue of Table 3 (and Table 1; digits, small ConstNet, train_ensemble)): ConstNet test accuracy with each symmetry-breaking noise source, FP32 and bfloat16 (Tables 1, 3).
show(blumenfeld2020.table_3)

# %%
# ``blumenfeld2020.table_4`` (analogue of Table 4 (digits, small ConstNet, train_ensemble)): '0' against i.i.d. (He) initialisation of ConstNet with dropout and computation noise (Table 4).
show(blumenfeld2020.table_4)

# %%
# ``blumenfeld2020.fig_7`` (analogue of Fig. 7 (digits, small ConstNet, train_ensemble)): ln C_f of every ConstNet convolution over training, '0' init (dropout + computation noise) against He.
show(blumenfeld2020.fig_7)

# %%
# ``blumenfeld2020.fig_8`` (analogue of Fig. 8 (digits, small LeakyNets and a He LeakyNet, train_ensemble)): ln C_f per layer at the end of training for LeakyNets with mixed 'I'/'1' layers and a He LeakyNet.
show(blumenfeld2020.fig_8)

# %%
# ``blumenfeld2020.fig_11`` (analogue of Fig. 11 (digits, small ConstNet, train_ensemble)): Distribution over seeds of the final test accuracy of every ConstNet variant of :func:`table_3`.
show(blumenfeld2020.fig_11)

# %%
# ``blumenfeld2020.fig_4`` (analogue of Fig. 4 (digits, small ConstNet)): ``1 - C_f`` and ``1 - C_b`` per group of a '0'-initialised ConstNet with 1 % dropout (groups derived from the network: Sec. 4.2).
show(blumenfeld2020.fig_4)
