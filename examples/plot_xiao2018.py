"""
Xiao et al. 2018: dense and CNN mean field, orthogonal kernels
=========================================================================

Every figure of the paper, drawn at the smoke size; ``meanfield figures xiao2018 --full`` draws
them at the paper's sizes.
"""

# sphinx_gallery_capture_repr = ()
from meanfield.figures import xiao2018
from meanfield.figures.harness import show_figure as show

# %%
# ``xiao2018.fig_s1`` (Fig. S1): Phase diagram of tanh networks: q* (colour) over (sigma_w2, sigma_b2) and the critical line chi_1 = 1.
show(xiao2018.fig_s1)

# %%
# ``xiao2018.fig_qc_maps`` (not in the paper (Poole et al. 2016 style)): q^l and c^l of two inputs through tanh layers: theory lines, Monte-Carlo points +- standard error.
show(xiao2018.fig_qc_maps)

# %%
# ``xiao2018.fig_depth_scales`` (not in the paper (Schoenholz et al. 2017 style)): xi_c versus sigma_w2 for tanh at several sigma_b2: divergence at the edge of chaos.
show(xiao2018.fig_depth_scales)

# %%
# ``xiao2018.fig_2_theory`` (Fig. 2 (theory curve only)): 6 xi_c over (sigma_w2, depth) for tanh at sigma_b2 = 2e-5: deeper networks do not train (Fig. 2).
show(xiao2018.fig_2_theory)

# %%
# ``xiao2018.fig_4b`` (Fig. 4b): Singular values of A_v (descending; each has 64 copies on 64 x 64 covariances) for GS0 ... GS4.
show(xiao2018.fig_4b)

# %%
# ``xiao2018.fig_s2`` (Fig. S2): Weight-gradient norms ``|dE/dW^l|^2 / |dE/dW^L|^2`` of random tanh CNNs across the phase transition.
show(xiao2018.fig_s2)

# %%
# ``xiao2018.fig_s3`` (Fig. S3): Singular values of block-circulant vs dense i.i.d. Gaussian weight matrices vs Marchenko-Pastur.
show(xiao2018.fig_s3)

# %%
# ``xiao2018.fig_s4`` (Fig. S4): Absolute Fourier amplitudes of the first cyclic diagonal of eps^l through random erf CNNs (Sec. F).
show(xiao2018.fig_s4)

# %%
# ``xiao2018.fig_2`` (Fig. 2, trained networks): Training accuracy over (sigma_w2, depth) of tanh networks at sigma_b2 = 2e-5, with 6 xi_c overlaid.
show(xiao2018.fig_2)

# %%
# ``xiao2018.fig_1`` (Fig. 1, trained networks): Test accuracy over training of critical delta-orthogonal vs Gaussian tanh CNNs of the same depth.
show(xiao2018.fig_1)

# %%
# ``xiao2018.fig_3`` (Fig. 3, trained networks): Training and test accuracy curves of the deepest delta-orthogonal tanh CNN (with orthogonal, Algorithm 1).
show(xiao2018.fig_3)

# %%
# ``xiao2018.fig_5`` (Fig. 5, trained networks): Training speed: orthogonal (Algorithm 1) against Gaussian kernels of the same critical depth.
show(xiao2018.fig_5)

# %%
# ``xiao2018.fig_4a`` (Fig. 4a, trained networks): Test accuracy against depth of critical Gaussian tanh CNNs with variance vectors GS0 ... GS4.
show(xiao2018.fig_4a)

# %%
# ``xiao2018.fig_spectra`` (Sec. 2.2.1): Jacobian spectra of critical tanh networks, orthogonal vs Gaussian weights at depths 2^k.
show(xiao2018.fig_spectra)

# %%
# ``xiao2018.fig_kernel_regression`` (not in the paper (Fig. 2 style, Lee et al. 2019 kernels)): test accuracy of NNGP / NTK regression of erf networks on the digits over (sigma_w2, depth), with 6 xi_c.
show(xiao2018.fig_kernel_regression)
