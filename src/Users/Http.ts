import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { CurrentPrincipal } from "../Domain/Principal.js"
import { Users } from "./Users.js"

export const UsersHttp = HttpApiBuilder.group(Api, "users", (handlers) =>
  Effect.gen(function* () {
    const users = yield* Users
    return handlers
      .handle("me", () => Effect.flatMap(CurrentPrincipal, (me) => users.get(me.userId)))
      .handle("updateMe", ({ payload }) => Effect.flatMap(CurrentPrincipal, (me) => users.updateMe(me.userId, payload)))
  })
)
