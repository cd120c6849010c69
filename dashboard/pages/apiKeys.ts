/**
 * Settings → API keys: the list (every status, filterable), creating a key (name, scopes, expiry) whose value is
 * shown once with a copy button — it lives only in this page's memory until "Done" or the next navigation — and
 * revoking with a confirmation.
 */
import { api, bodyOf, dataOf, oneOf, pageParam, someOf } from "../api.ts"
import { h } from "../dom.ts"
import type { PageContext } from "../router.ts"
import { type ApiKey, scopes } from "../types.ts"
import {
  actionButton,
  badge,
  checkboxes,
  checkedValues,
  confirmAction,
  field,
  formValue,
  input,
  listRegion,
  onSubmit,
  secretOnce,
  select,
  when
} from "../ui.ts"
import { filterForm } from "./projects.ts"

/** The end of the chosen day in the browser's time zone, as an instant. */
const endOfDay = (date: string): string => new Date(`${date}T23:59:59.999`).toISOString()

export const apiKeysPage = async (context: PageContext): Promise<void> => {
  const { q } = context
  context.title("API keys")
  context.root.append(
    h(
      "p",
      { class: "muted" },
      "Keys let programs call the API as you: send one as ",
      h("code", null, "Authorization: Bearer pcs_…"),
      ". A key can only have scopes you have; revoked keys stop working at once."
    )
  )

  const created = h("div", { class: "created-slot" })
  const keys = listRegion<ApiKey>({
    caption: "API keys",
    fetch: () =>
      api
        .GET("/v1/api-keys", {
          params: {
            query: {
              page: pageParam(q("page")),
              per_page: 20,
              status: oneOf(["active", "expired", "revoked"], q("status")),
              search: q("search") || undefined
            }
          }
        })
        .then(bodyOf),
    pageHref: (n) => context.href({ page: n }),
    empty: "No keys match.",
    columns: [
      { label: "Name", cell: (key) => key.name },
      { label: "Key", cell: (key) => h("code", { class: "nowrap" }, `${key.prefix}…`) },
      { label: "Scopes", cell: (key) => h("span", { class: "scopes" }, key.scopes.join(", ")) },
      { label: "Status", cell: (key) => badge(key.status) },
      { label: "Created", cell: (key) => when(key.created_at) },
      { label: "Expires", cell: (key) => (key.expires_at === null ? "Never" : when(key.expires_at)) },
      { label: "Last used", cell: (key) => (key.last_used_at === null ? "Never" : when(key.last_used_at)) },
      {
        label: "Actions",
        cell: (key) =>
          key.status === "active"
            ? actionButton(
                "Revoke",
                async () => {
                  if (
                    !(await confirmAction(
                      `Revoke the key “${key.name}” (${key.prefix}…)? Programs using it will get 401 at once.`,
                      "Revoke key"
                    ))
                  )
                    return
                  await api.DELETE("/v1/api-keys/{id}", { params: { path: { id: key.id } } })
                  await keys.load()
                },
                { className: "danger", ariaLabel: `Revoke ${key.name}` }
              )
            : key.status === "revoked"
              ? when(key.revoked_at)
              : h("span", { class: "muted" }, "—")
      }
    ]
  })

  const form = onSubmit(
    h(
      "form",
      { class: "stack", "aria-label": "New API key" },
      field({
        label: "Name",
        name: "name",
        control: input({ required: true, maxlength: 100, placeholder: "CI deploys" })
      }),
      checkboxes({
        legend: "Scopes",
        name: "scopes",
        values: scopes,
        checked: ["read"],
        hint: "read and write cover every *:read and *:write scope."
      }),
      field({
        label: "Expires on (optional)",
        name: "expires_at",
        control: input({ type: "date", min: new Date(Date.now() + 86_400_000).toISOString().slice(0, 10) }),
        hint: "The key stops working at the end of that day. Leave empty for a key that does not expire."
      }),
      h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Create key"))
    ),
    async (form) => {
      const expires = formValue(form, "expires_at")
      const key = await api
        .POST("/v1/api-keys", {
          body: {
            name: formValue(form, "name"),
            scopes: someOf(scopes, checkedValues(form, "scopes")),
            ...(expires === "" ? {} : { expires_at: endOfDay(expires) })
          }
        })
        .then(dataOf)
      form.reset()
      form.closest("details")?.removeAttribute("open")
      const panel = secretOnce({ title: `Key “${key.name}” created`, label: "Your new API key", value: key.key })
      created.replaceChildren(panel)
      panel.querySelector<HTMLElement>("h2")?.setAttribute("tabindex", "-1")
      panel.querySelector<HTMLElement>("h2")?.focus()
      await keys.load()
    }
  )

  const filters = filterForm(
    context,
    "Filter API keys",
    [
      field({ label: "Search", name: "search", control: input({ type: "search", value: q("search") }) }),
      field({
        label: "Status",
        name: "status",
        control: select(
          [
            ["", "Any"],
            ["active", "Active"],
            ["expired", "Expired"],
            ["revoked", "Revoked"]
          ],
          q("status")
        )
      })
    ],
    ["search", "status"]
  )

  context.root.append(
    created,
    h("details", { class: "card create" }, h("summary", null, "New API key"), form),
    filters,
    keys.element
  )
  await keys.load()
}
