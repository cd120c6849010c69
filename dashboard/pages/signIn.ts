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
    // There is no self sign-up; a visitor gets a neutral hint, not the operator's commands (docs/cli.md has them).
    h(
      "p",
      { class: "muted" },
      "No account yet, or forgot your password? Ask whoever runs this service: accounts are made there, not here."
    )
  )
}
