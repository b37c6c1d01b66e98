// Where a reply delivery that used its tries goes: the core's failure book (HooksPlugin.after
// .recordFailure, which posts the owner's "Hook <name>: delivery failed after <n> attempts" event)
// when this hookgate has one; without it the log says so, naming the run.
import type { HooksPlugin } from '../../host-kit.ts';
import type { Logger } from '../../host.ts';
import { errorMessage } from '../../util/errors.ts';
import type { DeliveryDeadLetter } from './deliveries.ts';

interface FailureBook {
  recordFailure(input: DeliveryDeadLetter): unknown;
}

export function deliveryDeadLetters(
  plugin: () => HooksPlugin | undefined,
  logger: Logger,
): (letter: DeliveryDeadLetter) => void {
  return (letter) => {
    const book = (plugin() as { after?: Partial<FailureBook> } | undefined)?.after;
    const fields = {
      runId: letter.runId,
      hook: letter.hook,
      channel: letter.channel,
      attempts: letter.attempts,
      reason: letter.lastError,
    };
    if (!book?.recordFailure) {
      logger.error('a reply delivery failed for good', fields);
      return;
    }
    Promise.resolve()
      .then(() => book.recordFailure!(letter))
      .catch((err: unknown) =>
        logger.error('a failed delivery could not be recorded', { ...fields, why: errorMessage(err) }),
      );
  };
}
