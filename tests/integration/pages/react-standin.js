// A stand-in for the parts of React that docs/javascript.md's React example uses,
// keeping React's contract, for tests/integration/web_docs.sh (React is not a Debian
// package, and the test machine has no network besides Debian's and PyPI's).
//
// useSyncExternalStore(subscribe, getSnapshot): as React, it reads the snapshot twice
// per render and fails when the two differ (React: "The result of getSnapshot should be
// cached"), calls `subscribe` unbound (as React does: it must be bound already), and
// renders again after each change it is told of. createElement makes plain elements;
// render() puts one in a container and renders it again on every change.

let current = null;   // the render under way: {subscriptions}

export function useSyncExternalStore(subscribe, getSnapshot) {
  const first = getSnapshot();
  if (getSnapshot() !== first) throw new Error("The result of getSnapshot should be cached to avoid an infinite loop");
  current.subscriptions.push(subscribe);
  return first;
}

export function createElement(type, props, ...children) {
  return { type, props: props || {}, children: children.flat() };
}

function toDOM(element) {
  if (element === null || element === undefined || element === false) return document.createTextNode("");
  if (typeof element !== "object") return document.createTextNode(String(element));
  const node = document.createElement(element.type);
  for (const [key, value] of Object.entries(element.props)) {
    if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2).toLowerCase(), value);
    else node.setAttribute(key, value);
  }
  for (const child of element.children) node.appendChild(toDOM(child));
  return node;
}

/** Renders `Component` into `container`, and again after every change its stores report. */
export function render(Component, container) {
  let unsubscribes = [];
  const draw = () => {
    for (const u of unsubscribes) u();
    current = { subscriptions: [] };
    const element = Component();
    const subscriptions = current.subscriptions;
    current = null;
    container.replaceChildren(toDOM(element));
    const subscribe = (fn) => fn(draw);   // unbound, as React calls it
    unsubscribes = subscriptions.map(subscribe);
  };
  draw();
}
