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
