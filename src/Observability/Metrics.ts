/** The service's metrics, exported over OTLP with the traces when an endpoint is configured. */
import { type Fiber, FiberRef, Metric, MetricBoundaries, type MetricLabel } from "effect"

/** Seconds, by `http.route`, `http.request.method` and `http.response.status_code`. */
export const requestDuration = Metric.histogram(
  "http.server.request.duration",
  MetricBoundaries.exponential({ start: 0.0005, factor: 2, count: 16 }),
  "Duration of HTTP server requests, in seconds"
)

/** Delivery attempts, by `outcome` (`succeeded` | `failed`). */
export const deliveryAttempts = Metric.counter("webhook.delivery.attempts", {
  description: "Webhook delivery attempts",
  incremental: true
})

/** Milliseconds from when an attempt was due to when it started. */
export const deliveryLag = Metric.histogram(
  "webhook.delivery.lag",
  MetricBoundaries.exponential({ start: 1, factor: 2, count: 18 }),
  "Milliseconds between an attempt falling due and starting"
)

/** Deliveries waiting for an attempt (sampled). */
export const pendingDeliveries = Metric.gauge("webhook.deliveries.pending", {
  description: "Deliveries waiting for an attempt"
})

/** Starts a webhook's pace granted that were not made: the process got to them too late (Webhooks/Delivery/Pacer.ts). */
export const pacedStartsLapsed = Metric.counter("webhook.delivery.pace.lapsed", {
  description: "Paced webhook starts let go because the process got to them more than 50 ms after their grant",
  incremental: true
})

/** Requests refused with 429. */
export const rateLimitRejections = Metric.counter("http.rate_limit.rejections", {
  description: "Requests refused for being over the rate limit",
  incremental: true
})

/**
 * Updates `metric` in place, as `Metric.update` on a metric tagged with `labels` would: with the fiber's own metric
 * labels after them, but without its fiber steps, and without a new label array when the fiber has none (the
 * registry finds an instrument by its label array's identity, so `labels` should be made once by the caller).
 */
export const updateInPlace = <In>(
  metric: { readonly unsafeUpdate: (input: In, extraTags: ReadonlyArray<MetricLabel.MetricLabel>) => void },
  input: In,
  labels: ReadonlyArray<MetricLabel.MetricLabel>,
  fiber: Fiber.RuntimeFiber<unknown, unknown>
): void => {
  const extra = fiber.getFiberRef(FiberRef.currentMetricLabels)
  metric.unsafeUpdate(input, extra.length === 0 ? labels : labels.length === 0 ? extra : [...labels, ...extra])
}
