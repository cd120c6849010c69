/**
 * The authorization pages: sign-in, consent and the error page. Plain HTML, no scripts; every form carries the
 * pending authorization's id and its one-time form token (CSRF).
 */
import type { Scope } from "../Domain/Scopes.js"

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c)

const scopeMeaning: Record<Scope, string> = {
  read: "Read all your resources",
  write: "Change all your resources",
  "projects:read": "Read your projects",
  "projects:write": "Change your projects",
  "team:manage": "Manage your teams' members",
  "billing:read": "Read billing information"
}

const layout = (title: string, body: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 28rem; margin: 4rem auto; padding: 0 1rem; color: #222; }
label { display: block; margin: .75rem 0 .25rem; }
input[type=email], input[type=password] { width: 100%; padding: .5rem; box-sizing: border-box; }
button { margin-top: 1rem; padding: .5rem 1rem; margin-right: .5rem; }
.error { color: #b00020; }
</style>
</head>
<body>
${body}
</body>
</html>
`

const hidden = (pending: string, csrf: string) =>
  `<input type="hidden" name="pending" value="${escapeHtml(pending)}">
<input type="hidden" name="csrf_token" value="${escapeHtml(csrf)}">`

export const signInPage = (input: {
  readonly action: string
  readonly pending: string
  readonly csrf: string
  readonly clientName: string
  readonly email?: string
  readonly error?: string
}) =>
  layout(
    "Sign in",
    `<h1>Sign in</h1>
<p><strong>${escapeHtml(input.clientName)}</strong> wants to access your account.</p>
${input.error === undefined ? "" : `<p class="error" role="alert">${escapeHtml(input.error)}</p>`}
<form method="post" action="${escapeHtml(input.action)}">
${hidden(input.pending, input.csrf)}
<label for="email">Email</label>
<input id="email" type="email" name="email" autocomplete="username" required value="${escapeHtml(input.email ?? "")}">
<label for="password">Password</label>
<input id="password" type="password" name="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>`
  )

export const consentPage = (input: {
  readonly action: string
  readonly pending: string
  readonly csrf: string
  readonly clientName: string
  readonly scopes: ReadonlyArray<Scope>
}) =>
  layout(
    "Allow access?",
    `<h1>Allow access?</h1>
<p><strong>${escapeHtml(input.clientName)}</strong> asks for:</p>
<ul>
${input.scopes.map((scope) => `<li><code>${escapeHtml(scope)}</code>: ${escapeHtml(scopeMeaning[scope])}</li>`).join("\n")}
</ul>
<form method="post" action="${escapeHtml(input.action)}">
${hidden(input.pending, input.csrf)}
<button type="submit" name="decision" value="approve">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>`
  )

export const errorPage = (message: string) =>
  layout(
    "Authorization error",
    `<h1>This authorization request cannot continue</h1>
<p class="error">${escapeHtml(message)}</p>
<p>Go back to the application and start again.</p>`
  )
