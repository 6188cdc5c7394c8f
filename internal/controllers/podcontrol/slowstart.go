package podcontrol

import "sync"

// SlowStartInitialBatch is the first batch of SlowStartBatch (upstream's
// SlowStartInitialBatchSize).
const SlowStartInitialBatch = 1

// SlowStartBatch calls fn count times in batches of 1, 2, 4, … run in
// parallel, stopping after the first batch in which any call failed, so a
// controller whose creations are all rejected (quota, admission) sends a
// handful of requests rather than thousands. It returns how many calls
// succeeded and the first error.
func SlowStartBatch(count, initialBatch int, fn func() error) (int, error) {
	remaining := count
	successes := 0
	for batch := min(remaining, initialBatch); batch > 0; batch = min(2*batch, remaining) {
		errCh := make(chan error, batch)
		var wg sync.WaitGroup
		wg.Add(batch)
		for range batch {
			go func() {
				defer wg.Done()
				if err := fn(); err != nil {
					errCh <- err
				}
			}()
		}
		wg.Wait()
		curSuccesses := batch - len(errCh)
		successes += curSuccesses
		if len(errCh) > 0 {
			return successes, <-errCh
		}
		remaining -= batch
	}
	return successes, nil
}
