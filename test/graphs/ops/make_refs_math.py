# math_pointwise.fxg and math_special.fxg with their references from PyTorch (Debian's
# python3-torch 1.13 is enough): the issue-18 math family (copysign, fmax, hypot, nextafter,
# logaddexp, xlogy, float_power, sinc, nan_to_num, isclose, gcd, ...; erfc, erfcx, ndtr, ndtri,
# log_ndtr, i0e, i1e, mvlgamma, polygamma, igamma, igammac, zeta). The script writes the graphs
# too, so that graph and references list the same nodes. Float32 references are computed in
# float64 and rounded once, as fxc's kernels compute; no input gives a NaN output (--expect
# treats NaN as a mismatch: test/unit/kernels_test.cpp covers NaN and inf inputs).
# python3 test/graphs/ops/make_refs_math.py
import json, math, os, torch
from refs_io import save_file

here = os.path.dirname(os.path.abspath(__file__))
f64 = torch.float64


def write(name, inputs, nodes):
    """inputs: {name: tensor}; nodes: [(node, target, args, fn)], args as fxg args with input
    names as {"ref": ...}; fn computes the reference from the float64 inputs."""
    dt = {torch.float32: "f32", torch.float64: "f64", torch.int64: "i64", torch.bool: "b8"}
    g = {"format": "fxg", "version": 1, "name": name,
         "inputs": [{"name": k, "dtype": dt[v.dtype], "shape": list(v.shape)} for k, v in inputs.items()],
         "nodes": [{"name": n, "target": t, "args": a} for n, t, a, _ in nodes],
         "outputs": [n for n, _, _, _ in nodes]}
    with open(f"{here}/{name}.fxg", "w") as f:
        f.write("{\n  \"format\": \"fxg\",\n  \"version\": 1,\n  \"name\": \"%s\",\n  \"inputs\": [\n" % name)
        f.write(",\n".join("    " + json.dumps(i) for i in g["inputs"]) + "\n  ],\n  \"nodes\": [\n")
        f.write(",\n".join("    " + json.dumps(n) for n in g["nodes"]) + "\n  ],\n")
        f.write("  \"outputs\": " + json.dumps(g["outputs"]) + "\n}\n")
    outs = {}
    for i, (n, t, a, fn) in enumerate(nodes):
        outs[f"output_{i}"] = fn().contiguous()
    save_file(inputs, f"{here}/{name}.in.safetensors")
    save_file(outs, f"{here}/{name}.ref.safetensors")


def r(n):
    return {"ref": n}


def f32(fn, *ts):  # float64 computation rounded once to float32
    return fn(*[t.double() if t.is_floating_point() else t for t in ts]).float()


# ---- pointwise: a, b finite (zeros of both signs, values near each other); w with inf and NaN.
a = torch.tensor([-3.7, -2.5, -1.0, -0.5, -0.0, 0.0, 0.3, 0.5, 1.0, 2.0, 3.5, 7.0, 1e-3, -1e-3,
                  12.25, -12.25, 0.75, 100.0, -100.0, 5.0, 2.5, -7.5, 1.5, 0.0])
b = torch.tensor([2.0, -2.5, 0.0, 0.5, 1.0, -0.0, -0.3, 0.5, 4.0, -2.0, 3.5, -7.0, 1e-3, 2e-3,
                  -1.0, 3.0, 0.75, 1.0, -1.0, 5.0, -2.5, 0.25, -1.5, -3.0])
p = torch.tensor([0.5, 1.0, 2.0, 3.0, 0.1, 10.0, 0.25, 7.5, 1e-3, 1.5, 4.0, 0.9])
q = torch.tensor([1.5, -0.5, 2.0, 0.0, 3.0, -1.0, 0.5, 1.0, 2.0, -2.0, 0.5, 1.0])
w = torch.tensor([float("inf"), -float("inf"), float("nan"), 1.0, -0.0, 0.0, -2.0, 3e38])
e = torch.tensor([0, 1, -1, 3, -3, 10, 2, 0, -2, 5, 1, 4, 7, -7, 0, 1, 2, 3, -1, 0, 1, -5, 2, 8])
ia = torch.tensor([12, -18, 0, 7, 100, -36, 0, 21, 13, 48, -9, 1])
ib = torch.tensor([18, 12, 5, 0, 75, -24, 0, 14, 26, -32, 6, 1])
a2 = a + torch.tensor([1e-6, 1e-3, 0.0, 1e-9] * 6)
v = torch.tensor([1.0, 2.0, 3.0, -1.0, 0.5, -0.5, 4.0, 2.0])
ad, bd = a.double(), b.double()
inputs = {"a": a, "b": b, "p": p, "q": q, "w": w, "v": v, "e": e, "ia": ia, "ib": ib, "a2": a2,
          "ad": ad, "bd": bd}
A = "aten."
nodes = [
    ("copysign", A + "copysign.Tensor", [r("a"), r("b")], lambda: torch.copysign(a, b)),
    ("fmax", A + "fmax.default", [r("a"), r("b")], lambda: torch.fmax(a, b)),
    ("fmin", A + "fmin.default", [r("a"), r("b")], lambda: torch.fmin(a, b)),
    ("fmax_nan", A + "fmax.default", [r("w"), r("v")], lambda: torch.fmax(w, v)),
    ("fmin_nan", A + "fmin.default", [r("v"), r("w")], lambda: torch.fmin(v, w)),
    ("hypot", A + "hypot.default", [r("a"), r("b")], lambda: f32(torch.hypot, a, b)),
    ("ldexp", A + "ldexp.Tensor", [r("a"), r("e")], lambda: torch.ldexp(a, e)),
    ("nextafter", A + "nextafter.default", [r("a"), r("b")], lambda: torch.nextafter(a, b)),
    ("nextafter_d", A + "nextafter.default", [r("ad"), r("bd")], lambda: torch.nextafter(ad, bd)),
    ("heaviside", A + "heaviside.default", [r("a"), r("b")], lambda: torch.heaviside(a, b)),
    ("logaddexp", A + "logaddexp.default", [r("a"), r("b")], lambda: f32(torch.logaddexp, a, b)),
    ("logaddexp2", A + "logaddexp2.default", [r("a"), r("b")], lambda: f32(torch.logaddexp2, a, b)),
    ("xlogy", A + "xlogy.Tensor", [r("q"), r("p")], lambda: f32(torch.xlogy, q, p)),
    ("xlog1py", A + "special_xlog1py.default", [r("q"), r("p")], lambda: f32(torch.special.xlog1py, q, p)),
    ("fpow", A + "float_power.Tensor_Tensor", [r("p"), r("q")], lambda: torch.float_power(p, q)),
    ("fpow_ts", A + "float_power.Tensor_Scalar", [r("p"), 2.5], lambda: torch.float_power(p, 2.5)),
    ("fpow_s", A + "float_power.Scalar", [3, r("q")], lambda: torch.float_power(3, q)),
    ("sinc", A + "sinc.default", [r("a")], lambda: f32(torch.sinc, a)),
    ("sgn", A + "sgn.default", [r("a")], lambda: torch.sgn(a)),
    ("signbit", A + "signbit.default", [r("a")], lambda: torch.signbit(a)),
    ("signbit_i", A + "signbit.default", [r("ia")], lambda: torch.signbit(ia)),
    ("frac", A + "frac.default", [r("a")], lambda: torch.frac(a)),
    ("deg2rad", A + "deg2rad.default", [r("a")], lambda: f32(torch.deg2rad, a)),
    ("rad2deg", A + "rad2deg.default", [r("a")], lambda: f32(torch.rad2deg, a)),
    ("rad2deg_i", A + "rad2deg.default", [r("ia")], lambda: torch.rad2deg(ia.double()).float()),
    ("positive", A + "positive.default", [r("a")], lambda: torch.positive(a)),
    ("angle", A + "angle.default", [r("a")], lambda: torch.angle(a)),
    ("conj", A + "conj_physical.default", [r("a")], lambda: torch.conj_physical(a)),
    ("isfinite", A + "isfinite.default", [r("w")], lambda: torch.isfinite(w)),
    ("isposinf", A + "isposinf.default", [r("w")], lambda: torch.isposinf(w)),
    ("isneginf", A + "isneginf.default", [r("w")], lambda: torch.isneginf(w)),
    ("isreal", A + "isreal.default", [r("w")], lambda: torch.isreal(w)),
    ("isfinite_i", A + "isfinite.default", [r("ia")], lambda: torch.isfinite(ia)),
    ("nan_to_num", A + "nan_to_num.default", [r("w")], lambda: torch.nan_to_num(w)),
    ("nan_to_num_v", A + "nan_to_num.default", [r("w"), 1.5, 100.0, -100.0],
     lambda: torch.nan_to_num(w, 1.5, 100.0, -100.0)),
    ("isclose", A + "isclose.default", [r("a"), r("a2")], lambda: torch.isclose(a, a2)),
    ("isclose_t", A + "isclose.default", [r("a"), r("a2"), 1e-3, 1e-4, True],
     lambda: torch.isclose(a, a2, 1e-3, 1e-4, True)),
    ("isclose_nan", A + "isclose.default", [r("w"), r("w"), {"name": "equal_nan", "value": True}],
     lambda: torch.isclose(w, w, equal_nan=True)),
    ("gcd", A + "gcd.default", [r("ia"), r("ib")], lambda: torch.gcd(ia, ib)),
    ("lcm", A + "lcm.default", [r("ia"), r("ib")], lambda: torch.lcm(ia, ib)),
    ("entr", A + "special_entr.default", [r("p")], lambda: f32(torch.special.entr, p)),
]
write("math_pointwise", inputs, nodes)

# ---- special functions: x across the branch points (+-3 for erfcx, -1 for log_ndtr, 30 for the
# Bessel expansions), u in (0, 1) with both tails, (s, qz) for zeta, (ga, gx) for igamma.
x = torch.tensor([-40.0, -26.0, -9.0, -5.0, -3.01, -2.99, -1.5, -1.01, -0.99, -0.5, -1e-3, 0.0,
                  1e-3, 0.25, 0.5, 1.0, 1.7, 2.5, 2.99, 3.0, 3.01, 4.5, 6.0, 8.0, 12.0, 20.0,
                  29.5, 30.5, 45.0, 80.0])
u = torch.tensor([1e-30, 1e-10, 1e-4, 0.01, 0.025, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9,
                  0.975, 0.99, 0.9999, 0.99999994])
xp = torch.tensor([1.01, 1.25, 1.5, 2.0, 2.5, 3.0, 4.75, 7.0, 10.0, 15.5])
ga = torch.tensor([0.5, 1.0, 2.0, 5.0, 10.0, 0.1, 3.5, 20.0, 1.5, 7.0, 0.25, 12.0])
gx = torch.tensor([0.3, 1.0, 4.0, 2.0, 15.0, 0.01, 3.5, 18.0, 8.0, 0.5, 2.5, 30.0])
zs = torch.tensor([1.5, 2.0, 3.0, 4.5, 2.5, 6.0, 1.1, 10.0, 2.0, 3.0, 5.0, 8.0])
zq = torch.tensor([0.5, 1.0, 2.0, 0.25, 3.0, 1.5, 1.0, 0.75, 10.0, 7.5, 0.1, 4.0])
xd, ud = x.double(), u.double()
gad, gxd = ga.double(), gx.double()
inputs = {"x": x, "u": u, "xp": xp, "ga": ga, "gx": gx, "zs": zs, "zq": zq, "xd": xd, "ud": ud,
          "gad": gad, "gxd": gxd}
S = torch.special
nodes = [
    ("erfc", A + "erfc.default", [r("x")], lambda: f32(torch.erfc, x)),
    ("erfcx", A + "special_erfcx.default", [r("x")], lambda: f32(S.erfcx, x)),
    ("ndtr", A + "special_ndtr.default", [r("x")], lambda: f32(S.ndtr, x)),
    ("log_ndtr", A + "special_log_ndtr.default", [r("x")], lambda: f32(S.log_ndtr, x)),
    ("ndtri", A + "special_ndtri.default", [r("u")], lambda: f32(S.ndtri, u)),
    ("i0e", A + "special_i0e.default", [r("x")], lambda: f32(S.i0e, x)),
    ("i1e", A + "special_i1e.default", [r("x")], lambda: f32(S.i1e, x)),
    ("mvlgamma", A + "mvlgamma.default", [r("xp"), 3], lambda: f32(lambda t: torch.mvlgamma(t, 3), xp)),
    ("polygamma", A + "special_polygamma.default", [2, r("xp")], lambda: f32(lambda t: S.polygamma(2, t), xp)),
    ("igamma", A + "igamma.default", [r("ga"), r("gx")], lambda: f32(torch.igamma, ga, gx)),
    ("igammac", A + "igammac.default", [r("ga"), r("gx")], lambda: f32(torch.igammac, ga, gx)),
    ("zeta", A + "special_zeta.default", [r("zs"), r("zq")], lambda: f32(S.zeta, zs, zq)),
    ("erfcx_d", A + "special_erfcx.default", [r("xd")], lambda: S.erfcx(xd)),
    ("ndtri_d", A + "special_ndtri.default", [r("ud")], lambda: S.ndtri(ud)),
    ("log_ndtr_d", A + "special_log_ndtr.default", [r("xd")], lambda: S.log_ndtr(xd)),
    ("i1e_d", A + "special_i1e.default", [r("xd")], lambda: S.i1e(xd)),
    ("igamma_d", A + "igamma.default", [r("gad"), r("gxd")], lambda: torch.igamma(gad, gxd)),
    ("igammac_d", A + "igammac.default", [r("gad"), r("gxd")], lambda: torch.igammac(gad, gxd)),
]
write("math_special", inputs, nodes)
