/**
 * The dashboard's entry: the layout (header, navigation, sign-out), the routes, and rendering a page into <main>.
 */
import { api, dataOf, logOut, signedIn, whenSessionEnds } from "./api.ts"
import { h, replace } from "./dom.ts"
import { apiKeysPage } from "./pages/apiKeys.ts"
import { securityLogPage, teamAuditPage } from "./pages/audit.ts"
import { eventPage, eventsPage } from "./pages/events.ts"
import { authorizedAppsPage, oauthAppPage, oauthAppsPage } from "./pages/oauthApps.ts"
import { projectPage, projectsPage } from "./pages/projects.ts"
import { sessionsPage } from "./pages/sessions.ts"
import { signInPage } from "./pages/signIn.ts"
import { teamPage, teamsPage } from "./pages/teams.ts"
import { deliveryPage, webhookPage, webhooksPage } from "./pages/webhooks.ts"
import {
  BASE,
  flashNext,
  interceptLinks,
  makeContext,
  match,
  navigate,
  route,
  setRenderer,
  takeFlash
} from "./router.ts"
import type { User } from "./types.ts"
import { errorBox, focusQuietly, twinOf } from "./ui.ts"

const ID = "([^/]+)"
route(/^\/sign-in$/, signInPage, { public: true })
route(/^\/$/, () => navigate(`${BASE}/projects`, { replace: true }))
route(/^\/projects$/, projectsPage)
route(new RegExp(`^/projects/${ID}$`), projectPage)
route(/^\/teams$/, teamsPage)
route(new RegExp(`^/teams/${ID}$`), teamPage)
route(new RegExp(`^/teams/${ID}/audit-log$`), teamAuditPage)
route(/^\/settings$/, () => navigate(`${BASE}/settings/api-keys`, { replace: true }))
route(/^\/settings\/api-keys$/, apiKeysPage)
route(/^\/settings\/oauth-apps$/, oauthAppsPage)
route(new RegExp(`^/settings/oauth-apps/${ID}$`), oauthAppPage)
route(/^\/settings\/authorized-apps$/, authorizedAppsPage)
route(/^\/settings\/sessions$/, sessionsPage)
route(/^\/settings\/security-log$/, securityLogPage)
route(/^\/webhooks$/, webhooksPage)
route(new RegExp(`^/webhooks/${ID}$`), webhookPage)
route(new RegExp(`^/webhooks/${ID}/deliveries/${ID}$`), deliveryPage)
route(/^\/events$/, eventsPage)
route(new RegExp(`^/events/${ID}$`), eventPage)

const SETTINGS = `${BASE}/settings`

const nav = [
  ["Projects", `${BASE}/projects`],
  ["Teams", `${BASE}/teams`],
  ["Webhooks", `${BASE}/webhooks`],
  ["Events", `${BASE}/events`],
  ["Settings", SETTINGS]
] as const

/** Settings' own pages, as tabs above each of them (Settings → Security log, as GitHub keeps its settings). */
const settingsNav = [
  ["API keys", `${SETTINGS}/api-keys`],
  ["OAuth apps", `${SETTINGS}/oauth-apps`],
  ["Authorized apps", `${SETTINGS}/authorized-apps`],
  ["Sessions", `${SETTINGS}/sessions`],
  ["Security log", `${SETTINGS}/security-log`]
] as const

/** A list of section links; the one of the current page is marked when the page is drawn (`render`). */
const sectionLinks = (links: ReadonlyArray<readonly [string, string]>): HTMLElement =>
  h(
    "ul",
    null,
    links.map(([label, href]) => h("li", null, h("a", { href, "data-section": href }, label)))
  )

let me: Promise<User> | undefined

const header = (): HTMLElement => {
  const who = h("span", { class: "who-name" })
  me ??= api.GET("/v1/users/me").then(dataOf)
  me.then(
    (user) => (who.textContent = user.name),
    () => (me = undefined)
  )
  return h(
    "header",
    { class: "top" },
    h("a", { class: "brand", href: `${BASE}/projects` }, "Project Collaboration"),
    h("nav", { class: "main-nav", "aria-label": "Main" }, sectionLinks(nav)),
    h(
      "div",
      { class: "who" },
      who,
      h(
        "button",
        {
          type: "button",
          class: "link-button",
          onclick: async () => {
            await logOut()
            me = undefined
            flashNext("You are signed out.")
            navigate(`${BASE}/sign-in`)
          }
        },
        "Sign out"
      )
    )
  )
}

const appElement = document.getElementById("app")
if (appElement === null) throw new Error("the dashboard page has no #app element")
const app: HTMLElement = appElement

const render = (focus: boolean): void => {
  const path = location.pathname
  const found = match(path)
  // Focus inside the page being replaced (an action that reloads it): it is put back on the same control in the new
  // page (the row's button that was pressed), else on the new page's heading.
  const previous = document.activeElement
  const hadFocus = previous !== null && app.querySelector("main")?.contains(previous) === true
  if (found !== undefined && found.route.public !== true && !signedIn()) {
    const next = path + location.search
    navigate(`${BASE}/sign-in${next === BASE || next === `${BASE}/` ? "" : `?next=${encodeURIComponent(next)}`}`, {
      replace: true
    })
    return
  }
  const withNav = found === undefined ? signedIn() : found.route.public !== true
  const main = h("main", { id: "main", tabindex: -1 })
  if (withNav && path.startsWith(`${SETTINGS}/`)) {
    main.append(h("nav", { class: "tabs settings-nav", "aria-label": "Settings" }, sectionLinks(settingsNav)))
  }
  let top = app.querySelector("header.top")
  if (withNav && top === null) top = header()
  replace(app, withNav ? top : null, main)
  for (const link of Array.from(app.querySelectorAll<HTMLAnchorElement>("[data-section]"))) {
    const section = link.getAttribute("data-section") ?? ""
    if (path === section || path.startsWith(`${section}/`)) link.setAttribute("aria-current", "page")
    else link.removeAttribute("aria-current")
  }
  // The page's status banner: a live region on every page (empty until there is news; ui.ts `announce`).
  main.append(h("p", { class: "flash", role: "status" }, takeFlash()))
  const root = h("div", { class: "page" })
  main.append(root)
  if (found === undefined) {
    document.title = "Not found · Dashboard"
    root.append(
      h("h1", { tabindex: -1 }, "Not found"),
      h("p", null, "There is no such page. ", h("a", { href: `${BASE}/projects` }, "Go to your projects."))
    )
  } else {
    const context = makeContext(root, found.params, () => render(false))
    Promise.resolve()
      .then(() => found.route.render(context))
      .catch((error: unknown) => root.append(errorBox(error)))
      .finally(() => {
        // A page of one record adds its h1 once the record is read: focus it then, unless the user moved on.
        const active = document.activeElement
        const lost = active === null || active === document.body || active === main || !active.isConnected
        const heading = root.querySelector<HTMLElement>("h1")
        // (The action that reloaded the page may have put focus on the new heading meanwhile: the twin still wins.)
        const twin = hadFocus && previous !== null ? twinOf(previous, root) : null
        if (twin !== null && (lost || active === heading)) twin.focus()
        else if ((focus || hadFocus) && lost && heading !== null) focusQuietly(heading)
      })
  }
  if (focus) queueMicrotask(() => root.querySelector<HTMLElement>("h1")?.focus())
}

whenSessionEnds((message) => {
  me = undefined
  if (location.pathname === `${BASE}/sign-in`) return
  flashNext(message)
  navigate(`${BASE}/sign-in?next=${encodeURIComponent(location.pathname + location.search)}`, { replace: true })
})

setRenderer(render)
interceptLinks()
render(false)
