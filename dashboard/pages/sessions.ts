/**
 * Settings → Sessions: the signed-in user's live sessions (sign-ins), this one marked, each with Sign out, and
 * "Sign out everywhere else" (`DELETE /v1/users/me/sessions`). An ended session's token is refused at once.
 */
import { api, bodyOf, pageParam } from "../api.ts"
import { h } from "../dom.ts"
import type { PageContext } from "../router.ts"
import type { Session } from "../types.ts"
import { actionButton, confirmAction, listRegion, when } from "../ui.ts"

export const sessionsPage = async (context: PageContext): Promise<void> => {
  const { q } = context
  context.title("Sessions")
  context.root.append(
    h(
      "p",
      { class: "muted" },
      "Every sign-in is a session, for an hour at most. Signing one out makes its token stop working at once, wherever it is used."
    )
  )
  const sessions = listRegion<Session>({
    caption: "Sessions",
    fetch: () =>
      api
        .GET("/v1/users/me/sessions", { params: { query: { page: pageParam(q("page")), per_page: 20 } } })
        .then(bodyOf),
    pageHref: (n) => context.href({ page: n }),
    empty: "No live sessions.",
    columns: [
      {
        label: "Browser or client",
        cell: (session) =>
          h(
            "span",
            null,
            session.user_agent ?? "Unknown",
            session.current ? [" ", h("span", { class: "badge" }, "this session")] : null
          )
      },
      { label: "Address", cell: (session) => h("code", { class: "nowrap" }, session.ip ?? "—") },
      { label: "Signed in", cell: (session) => when(session.created_at) },
      { label: "Last used", cell: (session) => (session.last_used_at === null ? "—" : when(session.last_used_at)) },
      {
        label: "Actions",
        cell: (session) =>
          session.current
            ? h("span", { class: "muted" }, "—")
            : actionButton(
                "Sign out",
                async () => {
                  if (!(await confirmAction("Sign this session out? Its token stops working at once.", "Sign out")))
                    return
                  await api.DELETE("/v1/users/me/sessions/{id}", { params: { path: { id: session.id } } })
                  await sessions.load()
                },
                { className: "danger", ariaLabel: `Sign out the session signed in ${session.created_at}` }
              )
      }
    ]
  })
  const everywhere = h(
    "div",
    { class: "actions" },
    actionButton(
      "Sign out everywhere else",
      async () => {
        if (
          !(await confirmAction(
            "Sign out every other session of yours? Their tokens stop working at once; this one stays.",
            "Sign out everywhere else"
          ))
        )
          return
        await api.DELETE("/v1/users/me/sessions")
        await sessions.load()
      },
      { className: "danger" }
    )
  )
  context.root.append(everywhere, sessions.element)
  await sessions.load()
}
