"""Exact Hessians of a whole ensemble of skip networks in a few large products (Orhan 2017, Figs. 7-12).

The degenerate-eigenvalue measurements of Orhan (2017) need the Hessian of each trained network's
mean cross-entropy in its hidden parameters ``theta = (W_l, b_l), l = 1 .. depth``. Automatic
differentiation (``torch.func.jacfwd(jacrev(loss))``, :func:`hessian_one`) runs ``p`` Hessian-vector
products through thousands of tiny matrix products per network; batching those over the members
with ``vmap`` did not help (the work is in the products, not in Python; measured in
``benchmarks/symmetry_training.py``). This module forms the same Hessian from its closed structure
instead, for all members at once.

The networks are built from three kinds of operations: linear maps (skips ``Q_l x_l``, the
hyper-residual averages ``P_k x_k / (l - 1)``, the path-residual mean, the read-out in ``x``,
constant biases), ReLUs (piecewise linear: second derivative zero wherever autodiff defines one)
and the bilinear products ``z_l = W_l x_l + b_l``. The second-order chain rule leaves two terms:

.. math::

    H = \\frac{1}{B} \\sum_b J_b^\\top \\big(\\mathrm{diag}(s_b) - s_b s_b^\\top\\big) J_b
        + \\sum_l \\sum_{i, j} \\big( e_{W_l[i, j]} \\otimes g_{l, i}^\\top \\partial_\\theta x_{l, j}
        + \\text{transpose} \\big),

the Gauss-Newton term (``J_b``: Jacobian of the logits of input ``b``, ``s_b`` its softmax) and the
bilinear term (``g_{l,b,i} = d loss / d z_{l,b,i}`` back-propagated as usual, contracted over the
inputs ``b`` with the forward Jacobian of the layer's input ``x_{l,j}``). The forward Jacobians of
the ``x_l`` are propagated exactly (forward mode with all ``p`` tangents at once), so the result
equals the autodiff Hessian up to float64 rounding (ReLU's derivative is taken as 0 at 0, as
PyTorch does). Batch normalisation (``batchnorm_layer``) has a nonzero second derivative of its
own and is not covered: callers use :func:`hessian_one` for it.

Shapes: ``E`` members (processed in chunks of :data:`MEMBER_CHUNK`), ``B`` inputs, ``n`` units,
``p = depth (n^2 + n)``; the Jacobians are ``(E, B, n, p)`` float64.
"""

from __future__ import annotations

#: Members whose Hessians are formed together at most: bounds the memory of the forward Jacobians
#: (``E B n p`` doubles each: 16 x 128 x 8 x 288 x 8 bytes = 38 MB at the validation row's sizes).
MEMBER_CHUNK = 16


def hessian_one(torch, model, row, x, y):
    """Hessian (p, p) of one network's mean cross-entropy on ``(x, y)`` in its hidden ``W_l, b_l`` (float64).

    Forward-over-reverse automatic differentiation; the reference of :func:`hessians_exact` and
    the path taken with batch normalisation. ``row`` is the network's parameter row (P,); the
    hidden block is contiguous (``SkipNet.hidden_block``), so the loss is a function of that slice.
    """
    th = row.detach().double()[None]
    start, stop = model.net.hidden_block(model.n_in)
    pre, flat0, post = th[:, :start], th[0, start:stop], th[:, stop:]
    xd = x.double()[None]

    def loss(flat):
        logits = model.forward(torch.cat([pre, flat[None], post], dim=1), xd)[0]
        return torch.nn.functional.cross_entropy(logits, y)

    # forward-over-reverse (torch.func); as fast as autograd.functional.hessian in steady state and
    # without its first-call overhead (benchmarks/symmetry_training.py)
    return torch.func.jacfwd(torch.func.jacrev(loss))(flat0).detach()


def hessians_exact(torch, model, theta, x, y):
    """Hessians (E, p, p) of every network (rows of ``theta``) by the closed structure (module notes).

    ``model`` is a ``SkipModel`` without batch normalisation; ``x`` (B, d), ``y`` (B,) int64.
    """
    if model.net.batchnorm_layer is not None:
        raise ValueError("hessians_exact does not cover batch normalisation; use hessian_one")
    th = theta.detach().double()
    out = [_chunk(torch, model, th[s : s + MEMBER_CHUNK], x.double(), y) for s in range(0, th.shape[0], MEMBER_CHUNK)]
    return torch.cat(out, dim=0)


def _propagate(torch, j, mat):
    """``d(x M^T) = dx M^T`` for a Jacobian ``j`` (E, k, B, n) and matrices ``mat`` (E, m, n)."""
    e, k, b, n = j.shape
    return torch.bmm(j.reshape(e, k * b, n), mat.transpose(1, 2)).view(e, k, b, mat.shape[1])


def _add(acc, j):
    """``acc + j`` where ``j`` may cover only the first columns of ``acc`` (the layers before it)."""
    if j is None:
        return acc
    acc = acc.clone()
    acc[:, : j.shape[1]] += j
    return acc


def _chunk(torch, model, th, x, y):
    net = model.net
    E, B = th.shape[0], x.shape[0]
    n, L = net.width, net.depth
    block = n * n + n
    p = L * block
    parts = th.split(model.sizes, dim=1)
    q, longs, _ = model._fixed(parts, E)
    ws = [parts[2 + 2 * i].reshape(E, n, n) for i in range(L)]
    bs = [parts[3 + 2 * i].reshape(E, 1, n) for i in range(L)]
    wout = parts[2 * L + 2].reshape(E, -1, n)
    bout = parts[2 * L + 3].reshape(E, 1, -1)

    # Jacobians d x_l / d theta are laid out (E, k, B, n) with k the *active* columns: x_l depends
    # on the parameters of layers < l only (the first (l - 1) blocks of theta), x_1 on none (None)
    h = torch.relu(torch.baddbmm(parts[1].view(E, 1, n), x.expand(E, B, -1), parts[0].view(E, n, -1).transpose(1, 2)))
    jh = None
    hist, jhist = [h], [None]
    far_j = None  # hyper-residual: running sum of the Jacobians of the long skips' inputs
    pres, jins = [], []
    for idx in range(L):
        z = torch.baddbmm(bs[idx], h, ws[idx].transpose(1, 2))
        if model.c is not None:
            z = z + model.c[idx]
        z.requires_grad_(True)
        pres.append(z)
        jins.append(jh)
        zd = z.detach()
        # d z_i = sum_j W_ij d x_j + x_j dW_ij + db_i: the first idx blocks from d x, block idx direct
        jz = torch.zeros(E, (idx + 1) * block, B, n, dtype=th.dtype)
        if jh is not None:
            jz[:, : idx * block] = _propagate(torch, jh, ws[idx])
        off = idx * block
        # jz[e, off + i n + j, b, i] = x[e, b, j];  jz[e, off + n n + i, b, i] = 1
        torch.diagonal(jz[:, off : off + n * n].view(E, n, n, B, n), dim1=1, dim2=4).add_(
            h.detach().transpose(1, 2).unsqueeze(-1)
        )
        torch.diagonal(jz[:, off + n * n : off + block], dim1=1, dim2=3).add_(1.0)
        new = torch.relu(z)
        jnew = jz * (zd > 0).to(zd.dtype).unsqueeze(1)
        if net.architecture == "path_residual":
            new = new + h.mean(dim=-1, keepdim=True)
            if jh is not None:
                jnew = _add(jnew, jh.mean(dim=-1, keepdim=True).expand_as(jh))
        elif net.architecture != "plain":
            if q is None:
                new = new + h
                jnew = _add(jnew, jh)
            else:
                new = new + torch.bmm(h, q[:, idx].transpose(1, 2))
                jnew = _add(jnew, None if jh is None else _propagate(torch, jh, q[:, idx]))
        if net.architecture == "hyper_residual" and idx >= 1:
            # far = sum_{k < idx} P_k x_k (P = Q when no long skips are given, identity when neither)
            mats = longs if longs is not None else q
            k = idx - 1  # the history entry that joins the sum at this layer
            if mats is None:
                far = sum(hist[:-1])
                add = jhist[k]
            else:
                far = sum(torch.bmm(xk, mats[:, j].transpose(1, 2)) for j, xk in enumerate(hist[:-1]))
                add = None if jhist[k] is None else _propagate(torch, jhist[k], mats[:, k])
            if add is not None:
                far_j = add if far_j is None else _add(add, far_j)
            new = new + far / idx
            if far_j is not None:
                jnew = _add(jnew, far_j / idx)
        h, jh = new, jnew
        hist.append(h)
        jhist.append(jh)
    logits = torch.baddbmm(bout, h, wout.transpose(1, 2))
    loss = torch.nn.functional.cross_entropy(logits.reshape(E * B, -1), y.repeat(E), reduction="sum") / B
    grads = torch.autograd.grad(loss, pres)  # d loss / d z_l, (E, B, n), the 1 / B of the mean included

    with torch.no_grad():
        # Gauss-Newton term: J^T (diag s - s s^T) J / B, J = d logits / d theta = W_out d x_L
        s = torch.softmax(logits.detach(), dim=-1)  # (E, B, C)
        jl = _propagate(torch, jh, wout)  # (E, p, B, C)
        a = (jl * s.sqrt().unsqueeze(1)).reshape(E, p, -1)
        g = (jl * s.unsqueeze(1)).sum(-1)  # (E, p, B)
        hess = (torch.bmm(a, a.transpose(1, 2)) - torch.bmm(g, g.transpose(1, 2))) / B
        # bilinear term of z_l = W_l x_l + b_l: rows W_l[i, j], columns d x_{l,j} / d theta
        for idx in range(L):
            jin = jins[idx]
            if jin is None:
                continue
            k = jin.shape[1]
            # t[e, i, j, c] = sum_b g[e, b, i] jin[e, c, b, j]
            t = torch.bmm(grads[idx].transpose(1, 2), jin.permute(0, 2, 3, 1).reshape(E, B, n * k))
            t = t.view(E, n * n, k)
            off = idx * block
            hess[:, off : off + n * n, :k] += t
            hess[:, :k, off : off + n * n] += t.transpose(1, 2)
    return hess
