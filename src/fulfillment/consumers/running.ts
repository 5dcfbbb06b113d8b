/** A background consumer; `stop` finishes the message in hand, then disconnects. */
export interface RunningConsumer {
  stop(): Promise<void>;
}
