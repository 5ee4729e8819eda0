"""Random commands on the demo flow (valid and not), shared by the tests that load a
session from several writers, and `normal`, the canonical text of a JSON document."""
import json


def normal(doc):
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))


ROUTES = ["detail", "reviews", "category", "settings", "checkout", "about", "notifications", "payment",
          "home", "search", "cart", "profile", "main", "login", "bogus"]


def random_op(rng, state):
    ids = []

    def walk(node):
        if isinstance(node, dict):
            if "id" in node:
                ids.append(node["id"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
    walk(state)
    kind = rng.choice(["push", "push", "push", "pop", "pop", "present", "dismiss", "select", "update",
                       "open", "setRoot", "popToRoot", "alert", "respond", "restart"])
    if kind == "push":
        route = rng.choice(ROUTES)
        return {"op": "push", "route": route, "params": rng.choice([{"id": rng.randint(1, 99)}, {"name": "x"}, {}, {"id": "nope"}])}
    if kind == "pop":
        return rng.choice([{"op": "pop"}, {"op": "pop", "from": rng.choice(ids or ["e1"])}, {"op": "pop", "count": 2}])
    if kind == "present":
        return {"op": "present", "route": rng.choice(["settings", "checkout", "detail"]), "params": {"id": 3}}
    if kind == "select":
        return rng.choice([{"op": "select", "index": rng.randint(0, 4)}, {"op": "select", "route": rng.choice(["home", "cart", "search"])}])
    if kind == "update":
        return {"op": "update", "data": {rng.choice("abc"): rng.choice([1, "two", None, [3]])}}
    if kind == "open":
        return {"op": "open", "url": rng.choice(["/product/7", "/search/red?inStock=1", "/orders/2", "/checkout?total=3.5", "/nowhere"])}
    if kind == "setRoot":
        return {"op": "setRoot", "route": rng.choice(["main", "login", "onboarding"])}
    if kind == "alert":
        return {"op": "alert", "title": "Sure?"}
    if kind == "respond":
        alert = state.get("alert") if isinstance(state, dict) else None
        return {"op": "respond", "alert": alert["id"] if alert else "e2", "button": "ok"}
    return {"op": kind}
