/**
 * Settings → OAuth applications (the clients you registered: register with a name, redirect URIs and a type; the
 * secret of a confidential client shown once with a copy button; edit, rotate the secret, delete with a
 * confirmation) and Settings → Authorized applications (the apps you allowed to act for you, each revoked with a
 * confirmation: its tokens stop working at once).
 */
import { api, bodyOf, dataOf, pageParam, taggedOf } from "../api.ts"
import { h } from "../dom.ts"
import { BASE, flashNext, navigate, type PageContext } from "../router.ts"
import type { Authorization, OAuthClient } from "../types.ts"
import {
  actionButton,
  announce,
  badge,
  confirmAction,
  copyableId,
  field,
  formValue,
  input,
  listRegion,
  onSubmit,
  readTaggedRecord,
  reloadWhenChangedMeanwhile,
  secretOnce,
  select,
  showWhenChangedMeanwhile,
  when
} from "../ui.ts"

/** `GET /v1/oauth-clients/:id` (docs/oauth.md). */
export type OAuthApp = OAuthClient
/** `GET /v1/authorizations`. */
export type AuthorizedApp = Authorization

const appsHref = `${BASE}/settings/oauth-apps`
const appHref = (id: string) => `${appsHref}/${encodeURIComponent(id)}`

/** Redirect URIs are typed one a line; blank lines are ignored. */
const redirectUrisOf = (form: HTMLFormElement): Array<string> =>
  formValue(form, "redirect_uris")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "")

const redirectUrisField = (value: ReadonlyArray<string> = []) => {
  const area = h("textarea", { rows: 3, required: true, spellcheck: "false", autocomplete: "off" })
  area.value = value.join("\n")
  return field({
    label: "Redirect URIs",
    name: "redirect_uris",
    control: area,
    hint: "One a line, up to 10: where the browser is sent back after the user answers. Compared exactly."
  })
}

const kind = (app: OAuthApp) => badge(app.public ? "public" : "confidential")

export const oauthAppsPage = async (context: PageContext): Promise<void> => {
  const { q } = context
  context.title("OAuth applications")
  context.root.append(
    h(
      "p",
      { class: "muted" },
      "Applications you register here can ask people to sign in and allow them access, through ",
      h("code", null, "/oauth/authorize"),
      ". A confidential application keeps a secret on its server; a public one (in a browser or on a phone) has none and must use PKCE."
    )
  )
  const created = h("div", { class: "created-slot" })
  const apps = listRegion<OAuthApp>({
    caption: "OAuth applications",
    fetch: () =>
      api.GET("/v1/oauth-clients", { params: { query: { page: pageParam(q("page")), per_page: 20 } } }).then(bodyOf),
    pageHref: (n) => context.href({ page: n }),
    empty: "You have not registered an application yet.",
    columns: [
      { label: "Name", cell: (app) => h("a", { href: appHref(app.id) }, app.name) },
      { label: "Client ID", cell: (app) => h("code", null, app.id) },
      { label: "Type", cell: kind },
      {
        label: "Redirect URIs",
        cell: (app) =>
          h(
            "span",
            { class: "url" },
            app.redirect_uris.map((uri, i) => [i === 0 ? null : h("br"), uri])
          )
      },
      { label: "Created", cell: (app) => when(app.created_at) }
    ]
  })

  const form = onSubmit(
    h(
      "form",
      { class: "stack", "aria-label": "Register an OAuth application" },
      field({
        label: "Application name",
        name: "name",
        control: input({ required: true, maxlength: 100, placeholder: "Deploy bot" }),
        hint: "Shown to people on the consent page."
      }),
      redirectUrisField(),
      field({
        label: "Type",
        name: "public",
        control: select([
          ["false", "Confidential (has a secret)"],
          ["true", "Public (no secret, PKCE)"]
        ]),
        hint: "Confidential: a server-side app that keeps a secret. Public: a browser or mobile app, which cannot."
      }),
      h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Register application"))
    ),
    async (form) => {
      const app = await api
        .POST("/v1/oauth-clients", {
          body: {
            name: formValue(form, "name"),
            redirect_uris: redirectUrisOf(form),
            public: formValue(form, "public") === "true"
          }
        })
        .then(dataOf)
      form.reset()
      form.closest("details")?.removeAttribute("open")
      const facts = h(
        "p",
        null,
        "Client ID: ",
        h("code", null, app.id),
        " · ",
        h("a", { href: appHref(app.id) }, "Open the application")
      )
      const panel =
        app.client_secret === undefined
          ? h(
              "div",
              { class: "flash", role: "status" },
              h("p", null, `“${app.name}” registered (public: no secret).`),
              facts
            )
          : secretOnce({ title: `“${app.name}” registered`, label: "Its client secret", value: app.client_secret })
      if (app.client_secret !== undefined) panel.querySelector("h2")?.after(facts)
      created.replaceChildren(panel)
      panel.querySelector<HTMLElement>("h2")?.setAttribute("tabindex", "-1")
      panel.querySelector<HTMLElement>("h2")?.focus()
      await apps.load()
    }
  )

  context.root.append(
    created,
    h("details", { class: "card create" }, h("summary", null, "Register an application"), form),
    apps.element
  )
  await apps.load()
}

export const oauthAppPage = async (context: PageContext): Promise<void> => {
  const id = context.params[0] ?? ""
  const byId = { params: { path: { id } } }
  const tagged = await readTaggedRecord(context, {
    read: () => api.GET("/v1/oauth-clients/{id}", byId).then(taggedOf),
    back: [appsHref, "← OAuth applications"],
    label: "OAuth application"
  })
  if (tagged === undefined) return
  const app = tagged.data
  // Edits and Delete send the ETag the page was drawn from, so they never overwrite someone else's change.
  let etag = tagged.etag
  /** `byId` with the `If-Match` of the version the page was drawn from. */
  const ifUnchanged = () => ({ params: { path: { id }, header: { "If-Match": etag } } })
  context.title(app.name, kind(app))
  const secretSlot = h("div", { class: "created-slot" })
  const facts = h(
    "dl",
    { class: "facts" },
    h("dt", null, "Client ID"),
    h("dd", null, copyableId("client", app.id)),
    h("dt", null, "Redirect URIs"),
    h(
      "dd",
      { class: "url" },
      app.redirect_uris.map((uri, i) => [i === 0 ? null : h("br"), uri])
    ),
    h("dt", null, "Client secret"),
    h("dd", null, app.public ? "None (public application: PKCE)" : "Hidden; rotate it to see a new one"),
    h("dt", null, "Created"),
    h("dd", null, when(app.created_at)),
    h("dt", null, "Updated"),
    h("dd", null, when(app.updated_at))
  )

  const actions = h(
    "div",
    { class: "actions" },
    app.public
      ? null
      : actionButton("Rotate secret", async () => {
          if (
            !(await confirmAction(
              `Make a new client secret for “${app.name}”? The current one stops working at once.`,
              "Rotate secret"
            ))
          )
            return
          const rotated = await api.POST("/v1/oauth-clients/{id}/rotate-secret", byId).then(dataOf)
          // The rotation changed the record (its updated_at): the form edits that version now.
          etag = (await api.GET("/v1/oauth-clients/{id}", byId).then(taggedOf)).etag
          if (rotated.client_secret === undefined) return
          const panel = secretOnce({
            title: "Secret rotated",
            label: "The new client secret",
            value: rotated.client_secret
          })
          secretSlot.replaceChildren(panel)
          panel.querySelector<HTMLElement>("h2")?.setAttribute("tabindex", "-1")
          panel.querySelector<HTMLElement>("h2")?.focus()
        }),
    actionButton(
      "Delete application",
      async () => {
        if (
          !(await confirmAction(
            `Delete “${app.name}”? Everyone who allowed it loses that grant, and its tokens stop working at once.`,
            "Delete application"
          ))
        )
          return
        const deleted = await api
          .DELETE("/v1/oauth-clients/{id}", ifUnchanged())
          .then(() => true, reloadWhenChangedMeanwhile(context, "application", "it was not deleted"))
        if (!deleted) return
        flashNext(`“${app.name}” deleted.`)
        navigate(appsHref)
      },
      { className: "danger" }
    )
  )

  const edit = h(
    "details",
    { class: "card" },
    h("summary", null, "Edit application"),
    onSubmit(
      h(
        "form",
        { class: "stack", "aria-label": "Edit application" },
        field({
          label: "Application name",
          name: "name",
          control: input({ required: true, maxlength: 100, value: app.name })
        }),
        redirectUrisField(app.redirect_uris),
        h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Save changes"))
      ),
      async (form) => {
        const saved = await api
          .PUT("/v1/oauth-clients/{id}", {
            ...ifUnchanged(),
            body: { name: formValue(form, "name"), redirect_uris: redirectUrisOf(form) }
          })
          .then(
            () => true,
            showWhenChangedMeanwhile(
              form,
              "application",
              () => api.GET("/v1/oauth-clients/{id}", byId).then(taggedOf),
              (current) => [
                ["Name", current.name],
                ["Redirect URIs", current.redirect_uris.join(", ")],
                ["Updated", when(current.updated_at)]
              ],
              (tag) => {
                etag = tag
              }
            )
          )
        if (!saved) return
        flashNext("Application saved.")
        context.refresh()
      }
    )
  )

  context.root.append(secretSlot, facts, actions, edit)
}

export const authorizedAppsPage = async (context: PageContext): Promise<void> => {
  const { q } = context
  context.title("Authorized applications")
  context.root.append(
    h(
      "p",
      { class: "muted" },
      "Applications you allowed to act for you. Revoking one stops its tokens at once; it must ask you again."
    )
  )
  const grants = listRegion<AuthorizedApp>({
    caption: "Authorized applications",
    fetch: () =>
      api.GET("/v1/authorizations", { params: { query: { page: pageParam(q("page")), per_page: 20 } } }).then(bodyOf),
    pageHref: (n) => context.href({ page: n }),
    empty: "You have not authorized any application.",
    columns: [
      { label: "Application", cell: (grant) => h("strong", null, grant.client.name) },
      { label: "Access", cell: (grant) => h("span", { class: "scopes" }, grant.scopes.join(", ")) },
      { label: "Authorized", cell: (grant) => when(grant.created_at) },
      {
        label: "Last used",
        cell: (grant) => (grant.last_used_at === null ? "Never" : when(grant.last_used_at))
      },
      {
        label: "Actions",
        cell: (grant) =>
          actionButton(
            "Revoke",
            async () => {
              if (
                !(await confirmAction(
                  `Revoke access for “${grant.client.name}”? Its tokens stop working at once.`,
                  "Revoke access"
                ))
              )
                return
              await api.DELETE("/v1/authorizations/{id}", { params: { path: { id: grant.id } } })
              await grants.load()
              announce(`Access for “${grant.client.name}” revoked: its tokens no longer work.`)
            },
            { className: "danger", ariaLabel: `Revoke ${grant.client.name}` }
          )
      }
    ]
  })
  context.root.append(grants.element)
  await grants.load()
}
