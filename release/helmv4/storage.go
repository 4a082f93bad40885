package helmv4

import (
	release3 "helm.sh/helm/v3/pkg/release"
	driver3 "helm.sh/helm/v3/pkg/storage/driver"
	ri4 "helm.sh/helm/v4/pkg/release"
	driver4 "helm.sh/helm/v4/pkg/storage/driver"
)

// storageDriver is a Helm v4 storage driver over a Helm v3 one: records
// are converted at the boundary (releaseToV3, releaseToV4), so both
// majors read and write the same records in the same store.
type storageDriver struct {
	v3 driver3.Driver
}

var _ driver4.Driver = storageDriver{}

// Name returns the v3 driver's name.
func (d storageDriver) Name() string { return d.v3.Name() }

// Create stores a new record.
func (d storageDriver) Create(key string, rls ri4.Releaser) error {
	r, err := releaseToV3(rls)
	if err != nil {
		return err
	}
	return mapErr(d.v3.Create(key, r))
}

// Update replaces a record.
func (d storageDriver) Update(key string, rls ri4.Releaser) error {
	r, err := releaseToV3(rls)
	if err != nil {
		return err
	}
	return mapErr(d.v3.Update(key, r))
}

// Delete removes a record and returns it.
func (d storageDriver) Delete(key string) (ri4.Releaser, error) {
	r, err := d.v3.Delete(key)
	if err != nil {
		return nil, mapErr(err)
	}
	return releaseToV4(r)
}

// Get returns one record.
func (d storageDriver) Get(key string) (ri4.Releaser, error) {
	r, err := d.v3.Get(key)
	if err != nil {
		return nil, mapErr(err)
	}
	return releaseToV4(r)
}

// List returns the records filter accepts.
func (d storageDriver) List(filter func(ri4.Releaser) bool) ([]ri4.Releaser, error) {
	var convErr error
	rs, err := d.v3.List(func(r *release3.Release) bool {
		r4, err := releaseToV4(r)
		if err != nil {
			convErr = err
			return false
		}
		return filter(r4)
	})
	if err != nil {
		return nil, mapErr(err)
	}
	if convErr != nil {
		return nil, convErr
	}
	return convertAll(rs)
}

// Query returns the records with labels.
func (d storageDriver) Query(labels map[string]string) ([]ri4.Releaser, error) {
	rs, err := d.v3.Query(labels)
	if err != nil {
		return nil, mapErr(err)
	}
	return convertAll(rs)
}

func convertAll(rs []*release3.Release) ([]ri4.Releaser, error) {
	out := make([]ri4.Releaser, 0, len(rs))
	for _, r := range rs {
		r4, err := releaseToV4(r)
		if err != nil {
			return nil, err
		}
		out = append(out, r4)
	}
	return out, nil
}
