/** Sign-in: email and password to `{auth_url}/login`; the session JWT is kept for this tab only. */
import { signedIn, signIn } from "../api.ts"
import { h } from "../dom.ts"
import { BASE, navigate, type PageContext } from "../router.ts"
import { field, formValue, input, onSubmit } from "../ui.ts"

/** Only a path inside the dashboard may be the place to go back to. */
const safeNext = (next: string | null): string =>
  next?.startsWith(`${BASE}/`) && !next.startsWith("//") ? next : `${BASE}/projects`

export const signInPage = (context: PageContext): void => {
  const next = safeNext(context.query.get("next"))
  if (signedIn()) {
    navigate(next, { replace: true })
    return
  }
  context.root.classList.add("narrow")
  context.title("Sign in")
  context.root.append(
    h(
      "p",
      { class: "muted" },
      "Sign in with your account's email and password to manage your projects, teams, API keys and webhooks."
    ),
    onSubmit(
      h(
        "form",
        { class: "card stack", "aria-label": "Sign in" },
        field({
          label: "Email",
          name: "email",
          control: input({ type: "email", autocomplete: "username", required: true })
        }),
        field({
          label: "Password",
          name: "password",
          control: input({ type: "password", autocomplete: "current-password", required: true })
        }),
        h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Sign in"))
      ),
      async (form) => {
        await signIn(formValue(form, "email").trim(), formValue(form, "password"))
        navigate(next, { replace: true })
      }
    ),
    // There is no self sign-up: accounts are made by whoever runs the service, with its operator command.
    h(
      "section",
      { class: "section", "aria-labelledby": "no-account-title" },
      h("h2", { id: "no-account-title" }, "No account yet?"),
      h(
        "p",
        null,
        "Accounts are not made here: whoever runs this service makes one on the server, with a password read " +
          "from standard input (never typed on the command line):"
      ),
      h(
        "pre",
        { class: "command" },
        h("code", null, "bun run cli users create --email you@example.com --name 'Your Name' --password-stdin")
      ),
      h(
        "p",
        { class: "muted" },
        "An account without a password (or a forgotten one) gets a new password with ",
        h("code", null, "bun run cli users set-password --email you@example.com"),
        ", which asks for it. See docs/cli.md."
      )
    )
  )
}
