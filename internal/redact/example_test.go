package redact_test

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/helmfleet/helmfleet/internal/redact"
)

func ExampleURL() {
	fmt.Println(redact.URL("https://bob:s3cret@charts.example.com/app-1.0.0.tgz?token=T&sig=S"))
	fmt.Println(redact.Strip("https://bob:s3cret@charts.example.com/app-1.0.0.tgz?token=T&sig=S"))
	fmt.Println(redact.URL("https://bob:s3cret@charts.example.com/%zz?token=T"))
	// Output:
	// https://***@charts.example.com/app-1.0.0.tgz?token=***&sig=***
	// https://charts.example.com/app-1.0.0.tgz
	// https://***@charts.example.com/%zz?token=***
}

func ExampleError() {
	_, err := url.Parse("https://bob:s3cret@charts.example.com/%zz?token=T")
	red := redact.Error(err)
	fmt.Println(red)
	var ue *url.Error
	fmt.Println(errors.As(red, &ue), ue.URL)
	// Output:
	// parse "https://***@charts.example.com/%zz?token=***": invalid URL escape "%zz"
	// true https://***@charts.example.com/%zz?token=***
}
