/** Reading the authorization server's sign-in and consent pages as a browser does (tests that go through them). */

/** The value of the form field `name` on `html`; a page without it fails the test, naming the field. */
export const formField = (html: string, name: string): string => {
  const match = new RegExp(`name="${name}" value="([^"]*)"`).exec(html)
  if (match?.[1] === undefined) throw new Error(`no ${name} in:\n${html}`)
  return match[1]
}

/** Where a browser posts the page's form: its `action`, resolved against the URL the page was served from. */
export const formAction = (html: string, pageUrl: string | URL): URL => {
  const match = /<form method="post" action="([^"]+)"/.exec(html)
  if (match?.[1] === undefined) throw new Error(`no form in:\n${html}`)
  return new URL(match[1], pageUrl)
}

/**
 * A browser's way from the authorization page (`authorize`, its query set) through its sign-in form as `email` up to
 * the consent form: the pending authorization, the consent page's address and cookie, and `answer`, which posts the
 * consent form as that browser would (the redirect back to the client is its `Location`).
 */
export const throughSignIn = async (authorize: URL, email: string, password: string) => {
  const page = await fetch(authorize)
  const signInForm = await page.text()
  const pending = formField(signInForm, "pending")
  const signedIn = await fetch(formAction(signInForm, page.url), {
    method: "POST",
    redirect: "manual",
    body: new URLSearchParams({ pending, csrf_token: formField(signInForm, "csrf_token"), email, password })
  })
  if (signedIn.status !== 303) throw new Error(`sign-in answered ${signedIn.status}:\n${await signedIn.text()}`)
  const consentUrl = new URL(signedIn.headers.get("location") ?? "", page.url)
  const cookie = (signedIn.headers.get("set-cookie") ?? "").split(";")[0] ?? ""
  const consent = await (await fetch(consentUrl, { headers: { cookie } })).text()
  const answer = (decision: "approve" | "deny") =>
    fetch(formAction(consent, consentUrl), {
      method: "POST",
      redirect: "manual",
      body: new URLSearchParams({ pending, csrf_token: formField(consent, "csrf_token"), decision })
    })
  return { pending, consentUrl, cookie, answer }
}
