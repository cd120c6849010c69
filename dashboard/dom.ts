/**
 * A few lines of DOM building instead of a framework: `h("button", { type: "button", onclick }, "Save")`.
 * Text always goes in as text nodes (never HTML), so nothing the API returns can become markup — and the page's
 * Trusted Types policy (`trusted-types 'none'`) would refuse an `innerHTML` string anyway.
 */
export type Child = Node | string | number | null | undefined | false | ReadonlyArray<Child>

type Handler = (event: Event) => void
export type Attrs = Record<string, string | number | boolean | null | undefined | Handler>

const append = (parent: Node, child: Child): void => {
  if (child === null || child === undefined || child === false) return
  if (Array.isArray(child)) {
    for (const item of child) append(parent, item)
    return
  }
  if (child instanceof Node) parent.appendChild(child)
  else parent.appendChild(document.createTextNode(String(child)))
}

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Attrs | null,
  ...children: Array<Child>
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === null || value === undefined || value === false) continue
    if (typeof value === "function") {
      element.addEventListener(name.replace(/^on/, ""), value)
    } else if (value === true) {
      element.setAttribute(name, "")
    } else {
      element.setAttribute(name, String(value))
    }
  }
  append(element, children)
  return element
}

/** Appends children, skipping null/false ones. */
export const add = (parent: Element, ...children: Array<Child>): void => append(parent, children)

export const replace = (parent: Element, ...children: Array<Child>): void => {
  parent.replaceChildren()
  append(parent, children)
}

let counter = 0
/** A unique element id, for label/aria wiring. */
export const uid = (prefix = "f"): string => `${prefix}-${++counter}`
