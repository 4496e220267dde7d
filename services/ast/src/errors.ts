/**
 * Errors of the ast service. A bad task is `InvalidArgumentError` naming the field (`validateCodeTask`
 * in the sandbox); an unparseable candidate or reference is a component status, never an error. A
 * parser helper that died twice on one rollout is an infrastructure failure: both components are
 * NOT_APPLICABLE with {@link infrastructureDetails}, so the weight is removed instead of the
 * candidate being charged.
 * @module
 */

/** `details` of a component the parser helpers could not decide. */
export function infrastructureDetails(reason: string): string {
  return `infrastructure error, not the candidate's: ${reason}`;
}
