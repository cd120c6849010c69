/**
 * The authorization pages: sign-in, consent and the error page. Server-rendered HTML without any script, styled by
 * the dashboard's own stylesheet (served by this service at `STYLESHEET_PATH`, with the pages' few additions), so
 * they look like the dashboard and load nothing from elsewhere. Every form carries the pending authorization's id
 * and its one-time form token (CSRF). Every value is escaped.
 */
import type { Scope } from "../Domain/Scopes.js"

export const STYLESHEET_PATH = "/oauth/assets/styles.css"

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c)

/**
 * Each scope in words, as the consent page asks for it: what the endpoints that accept it let an OAuth token do
 * (the `RequiredScopes` of the contract; docs/authentication.md has the table). API keys and OAuth applications are
 * in none of them: `NEVER` says so.
 */
export const scopeMeaning: Record<Scope, string> = {
  read:
    "See your profile, your projects and their deployments, your teams, their members and invitations, your " +
    "webhooks and their deliveries, your events, and the applications you have authorized",
  write:
    "Change your profile; create, change and delete your projects, deployments and webhooks (and retry their " +
    "deliveries); accept or decline invitations; revoke applications you have authorized",
  "projects:read": "See your projects and their deployments",
  "projects:write": "Create, change and delete your projects, and record their deployments",
  "team:manage":
    "See and manage your teams: create and delete them, change members and roles, send and revoke invitations, " +
    "accept or decline invitations to you",
  "billing:read": "Read your billing information (nothing uses it yet)"
}

/** What an OAuth access token can never do, whatever its scopes (the services refuse it with 403). */
export const NEVER: ReadonlyArray<string> = [
  "See, create or revoke your API keys",
  "Register, change or delete OAuth applications, or see their secrets"
]

const layout = (title: string, body: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${escapeHtml(title)} · Project Collaboration Service</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${STYLESHEET_PATH}">
</head>
<body>
<a class="skip-link" href="#main">Skip to content</a>
<header class="top"><a class="brand" href="/dashboard">Project Collaboration</a></header>
<main id="main" tabindex="-1">
<div class="auth-page">
${body}
</div>
</main>
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
<p class="lead"><strong>${escapeHtml(input.clientName)}</strong> wants to access your account. Sign in to choose what it may do.</p>
<section class="card auth-card" aria-label="Sign in">
<form method="post" action="${escapeHtml(input.action)}">
${input.error === undefined ? "" : `<div class="form-error" role="alert"><p>${escapeHtml(input.error)}</p></div>`}
${hidden(input.pending, input.csrf)}
<div class="field">
<label for="email">Email</label>
<input id="email" type="email" name="email" autocomplete="username" required autofocus value="${escapeHtml(input.email ?? "")}">
</div>
<div class="field">
<label for="password">Password</label>
<input id="password" type="password" name="password" autocomplete="current-password" required>
</div>
<div class="actions"><button type="submit" class="primary">Sign in</button></div>
</form>
</section>
<p class="fine-print">No account yet? Accounts are made by the operator of this service. Nothing is shared until you allow it on the next page.</p>`
  )

export const consentPage = (input: {
  readonly action: string
  readonly pending: string
  readonly csrf: string
  readonly clientName: string
  readonly scopes: ReadonlyArray<Scope>
  readonly user: { readonly name: string; readonly email: string }
  /** Where "Not you?" starts again: the same authorization request, signed out. */
  readonly restart: string
  readonly redirectUri: string
}) =>
  layout(
    "Allow access?",
    `<h1>Allow access?</h1>
<p class="signed-in-as">
<span>Signed in as <strong>${escapeHtml(input.user.name)}</strong></span>
<span class="email">${escapeHtml(input.user.email)}</span>
<a href="${escapeHtml(input.restart)}">Not you?</a>
</p>
<section class="card auth-card" aria-labelledby="asks">
<p id="asks" class="lead"><strong>${escapeHtml(input.clientName)}</strong> asks to:</p>
<ul class="scope-list">
${input.scopes.map((scope) => `<li><span>${escapeHtml(scopeMeaning[scope])}</span><code>${escapeHtml(scope)}</code></li>`).join("\n")}
</ul>
<div class="never">
<p id="never">Whatever you allow, it can never:</p>
<ul aria-labelledby="never">
${NEVER.map((item) => `<li>${escapeHtml(item)}</li>`).join("\n")}
</ul>
</div>
<p class="destination">Either way, your browser will then be sent to:<code>${escapeHtml(input.redirectUri)}</code></p>
<form method="post" action="${escapeHtml(input.action)}">
${hidden(input.pending, input.csrf)}
<div class="actions">
<button type="submit" name="decision" value="approve" class="primary">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</div>
</form>
</section>
<p class="fine-print">You can revoke this access at any time in the dashboard, under <a href="/dashboard/settings/authorized-apps">Authorized applications</a>.</p>`
  )

/** `next`: what the person can do now (by default, start again from the application). */
export const errorPage = (message: string, next = "Go back to the application and start again.") =>
  layout(
    "Authorization error",
    `<h1>This authorization request cannot continue</h1>
<div class="form-error" role="alert"><p>${escapeHtml(message)}</p></div>
<p>${escapeHtml(next)}</p>`
  )
