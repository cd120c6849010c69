import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { decodePayload } from "../Contract/Request.js"
import { CurrentPrincipal } from "../Domain/Principal.js"
import { UpdateMe } from "./Api.js"
import { Users } from "./Users.js"

export const UsersHttp = HttpApiBuilder.group(Api, "users", (handlers) =>
  Effect.gen(function* () {
    const users = yield* Users
    return handlers
      .handle("me", () => Effect.flatMap(CurrentPrincipal, (me) => users.get(me.userId)))
      .handleRaw("updateMe", () =>
        Effect.flatMap(decodePayload(UpdateMe), (payload) =>
          Effect.flatMap(CurrentPrincipal, (me) => users.updateMe(me.userId, payload))
        )
      )
  })
)
