/**
 * Client-side routing under /dashboard: the History API, real links (so "open in new tab" works), and a page
 * function per route. The server answers every /dashboard/* address with the same shell, so deep links load.
 */
import { type Query, withQuery } from "./api.ts"
import { type Child, h } from "./dom.ts"

export const BASE = "/dashboard"

export interface PageContext {
  /** The page's own container, already on the screen. */
  readonly root: HTMLElement
  /** The route's captured path segments. */
  readonly params: ReadonlyArray<string>
  readonly query: URLSearchParams
  /** One query parameter, or "" when absent. */
  q(name: string): string
  readonly path: string
  /** Sets the document title and adds the page's `<h1>`. */
  title(text: string, ...after: Array<Child>): HTMLHeadingElement
  /** This page's address with other query parameters. */
  href(query: Query): string
  /** Renders this page again (after a change). */
  refresh(): void
}

export type PageRender = (context: PageContext) => void | Promise<void>

interface Route {
  readonly pattern: RegExp
  readonly render: PageRender
  readonly public?: boolean
}

const routes: Array<Route> = []
export const route = (pattern: RegExp, render: PageRender, options: { readonly public?: boolean } = {}): void => {
  routes.push({ pattern, render, ...options })
}

let renderCurrent: (focus: boolean) => void = () => {}
export const setRenderer = (renderer: (focus: boolean) => void): void => {
  renderCurrent = renderer
}

let pendingFlash: string | undefined
/** A message shown on the next page (e.g. "Project deleted."). */
export const flashNext = (message: string): void => {
  pendingFlash = message
}
export const takeFlash = (): string | undefined => {
  const message = pendingFlash
  pendingFlash = undefined
  return message
}

export const navigate = (to: string, options: { readonly replace?: boolean } = {}): void => {
  if (options.replace === true) history.replaceState(null, "", to)
  else history.pushState(null, "", to)
  renderCurrent(true)
}

export const match = (path: string): { readonly route: Route; readonly params: ReadonlyArray<string> } | undefined => {
  const relative = path.slice(BASE.length).replace(/\/+$/, "") || "/"
  for (const candidate of routes) {
    const found = candidate.pattern.exec(relative)
    if (found !== null)
      return { route: candidate, params: found.slice(1).map((part) => decodeURIComponent(part ?? "")) }
  }
  return undefined
}

export const makeContext = (root: HTMLElement, params: ReadonlyArray<string>, refresh: () => void): PageContext => {
  const path = location.pathname
  const query = new URLSearchParams(location.search)
  return {
    root,
    params,
    query,
    q: (name) => query.get(name) ?? "",
    path,
    title: (text, ...after) => {
      document.title = `${text} · Dashboard`
      const heading = h("h1", { tabindex: -1 }, text)
      root.append(after.length === 0 ? heading : h("div", { class: "page-head" }, heading, after))
      return heading
    },
    href: (next) => {
      const merged: Query = {}
      query.forEach((value, name) => {
        merged[name] = value
      })
      return withQuery(path, { ...merged, ...next })
    },
    refresh
  }
}

/** Same-origin links under /dashboard are followed without a page load. */
export const interceptLinks = (): void => {
  document.addEventListener("click", (event) => {
    if (
      event.defaultPrevented ||
      event.button !== 0 ||
      event.metaKey ||
      event.ctrlKey ||
      event.shiftKey ||
      event.altKey
    )
      return
    const target = event.target instanceof Element ? event.target.closest("a") : null
    if (target === null || target.target !== "" || target.hasAttribute("download")) return
    const url = new URL(target.href, location.href)
    if (url.origin !== location.origin || !url.pathname.startsWith(BASE)) return
    event.preventDefault()
    navigate(url.pathname + url.search)
  })
  window.addEventListener("popstate", () => renderCurrent(true))
}
