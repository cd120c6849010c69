/**
 * Transitional: the OAuth service was split into `Clients.ts`, `Authorizations.ts` and `Tokens.ts`. The bearer
 * middleware (`src/Auth/Http.ts`, moving to `src/Http/Authentication.ts`) still imports these two names from here;
 * it should import `{ ACCESS_PREFIX, OAuthTokens }` from `./Tokens.js` instead, and this file then goes.
 */
export { ACCESS_PREFIX, OAuthTokens as OAuth } from "./Tokens.js"
