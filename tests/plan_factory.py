"""Random and hand-made body plans for kinematics and solver tests.

A tiny documented chain (used for hand-computed answers)::

    root (free or fixed) --1--> a [hinge z] --1--> b [hinge z] --1--> tip

All offsets are +x, 1 unit long. With every angle zero the keypoints lie on the x axis
at 0, 1, 2, 3. Bending ``b`` by 90 degrees puts ``tip`` at (2, 1, 0).
"""

from __future__ import annotations

import warnings

import numpy as np

from pipeline.bodyplan import BodyPlan, load_body_plan


def chain_plan(fixed_base: bool = True) -> BodyPlan:
    def hinge():
        return {"type": "hinge", "axis": [0, 0, 1], "neutral": 0.0, "limits": None}

    joints = [
        {
            "name": "root",
            "parent": None,
            "offset_pos": [0, 0, 0],
            "offset_quat": [1, 0, 0, 0],
            "dofs": [],
        },
        {
            "name": "a",
            "parent": "root",
            "offset_pos": [1, 0, 0],
            "offset_quat": [1, 0, 0, 0],
            "dofs": [hinge()],
        },
        {
            "name": "b",
            "parent": "a",
            "offset_pos": [1, 0, 0],
            "offset_quat": [1, 0, 0, 0],
            "dofs": [hinge()],
        },
        {
            "name": "tip",
            "parent": "b",
            "offset_pos": [1, 0, 0],
            "offset_quat": [1, 0, 0, 0],
            "dofs": [],
        },
    ]
    return load_body_plan({"fixed_base": fixed_base, "joints": joints})


def _unit(rng: np.random.Generator) -> list[float]:
    v = rng.normal(size=3)
    return list(v / np.linalg.norm(v))


def _axis(rng: np.random.Generator) -> list[float]:
    """Unaligned, negative or aligned axes in equal measure."""
    kind = rng.integers(3)
    if kind == 0:
        return _unit(rng)
    axis = [0.0, 0.0, 0.0]
    axis[int(rng.integers(3))] = float(rng.choice([-1.0, 1.0]))
    return axis


def random_plan_dict(
    rng: np.random.Generator,
    n_joints: int = 7,
    kinds: bool = False,
    fixed_base: bool | None = None,
    limits: bool = False,
) -> dict:
    """A random tree; every joint with DOFs gets a child so every DOF is observable."""
    if fixed_base is None:
        fixed_base = bool(rng.integers(2))
    joints: list[dict] = [
        {
            "name": "j0",
            "parent": None,
            "offset_pos": list(rng.normal(size=3)),
            "offset_quat": [1, 0, 0, 0],
            "dofs": [],
        }
    ]
    for i in range(1, n_joints):
        parent = int(rng.integers(i))
        q = rng.normal(size=4) if rng.random() < 0.7 else np.array([1.0, 0, 0, 0])
        joint = {
            "name": f"j{i}",
            "parent": f"j{parent}",
            "offset_pos": list(rng.normal(size=3) * 0.5),
            "offset_quat": list(q / np.linalg.norm(q)),
        }
        choice = rng.integers(6) if kinds else 0
        if choice == 0:
            dofs = []
            for _ in range(int(rng.integers(0, 4))):
                lim = None
                if limits:
                    lo = float(rng.uniform(-1.5, -0.2))
                    lim = [lo, float(rng.uniform(0.2, 1.5))]
                dofs.append(
                    {
                        "type": "hinge" if rng.random() < 0.75 else "slide",
                        "axis": _axis(rng),
                        "neutral": 0.0,
                        "limits": lim,
                    }
                )
            joint["dofs"] = dofs
        elif choice == 1:
            joint.update(
                kind="ball",
                axis=_axis(rng),
                swing_limit=[float(rng.uniform(0.3, 2.5)), float(rng.uniform(0.3, 2.5))],
                twist_limit=[-float(rng.uniform(0.2, 2)), float(rng.uniform(0.2, 2))],
            )
        elif choice == 2:
            a = np.array(_axis(rng))
            b = np.cross(a, _unit(rng))
            joint.update(
                kind="universal",
                axes=[list(a), list(b / np.linalg.norm(b))],
                limits=[[-1.0, 1.0], [-0.8, 0.9]],
                neutral=[0.0, 0.0],
            )
        elif choice == 3:
            joint.update(kind="hinge", axis=_axis(rng), limits=[-1.2, 1.4], neutral=0.0)
        elif choice == 4:
            joint.update(kind="prismatic", axis=_axis(rng), limits=[-0.3, 0.5], neutral=0.0)
        else:
            joint.update(kind="fixed")
        joints.append(joint)
    # a child (tip) under every joint so every DOF moves a keypoint
    for i in range(n_joints):
        joints.append(
            {
                "name": f"tip{i}",
                "parent": f"j{i}",
                "offset_pos": list(rng.normal(size=3) * 0.5),
                "offset_quat": [1, 0, 0, 0],
                **({"kind": "fixed"} if kinds else {"dofs": []}),
            }
        )
    for j in joints:
        if kinds and "dofs" in j and not j["dofs"]:
            del j["dofs"]
            j["kind"] = "fixed"
    data = {"fixed_base": fixed_base, "joints": joints}
    if kinds:
        data["version"] = 2
    return data


def random_plan(rng: np.random.Generator, **kwargs) -> BodyPlan:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_body_plan(random_plan_dict(rng, **kwargs))


def random_pose(plan: BodyPlan, rng: np.random.Generator, n: int = 4, scale: float = 0.6):
    """Random DOF values inside the limits plus a random root pose."""
    from pipeline.kinematics.model import compile_plan
    from pipeline.solve.limits import clamp

    model = compile_plan(plan)
    q = plan.neutral + scale * rng.normal(size=(n, plan.n_dofs))
    q, _ = clamp(model, q)
    root_pos = rng.normal(size=(n, 3))
    quat = rng.normal(size=(n, 4))
    return q, root_pos, quat / np.linalg.norm(quat, axis=1, keepdims=True)


def joint(name: str, parent: str | None, offset=(0.0, 0.0, 0.0), **fields) -> dict:
    """A body-plan joint entry at rest orientation; ``fields`` add ``kind``/``dofs``..."""
    return {
        "name": name,
        "parent": parent,
        "offset_pos": list(offset),
        "offset_quat": [1, 0, 0, 0],
        **fields,
    }


def v2_plan(*joints: dict, fixed_base: bool = True) -> BodyPlan:
    """A version-2 body plan from :func:`joint` entries."""
    return load_body_plan({"version": 2, "fixed_base": fixed_base, "joints": list(joints)})
