/* shape.c - libshape.so, built with -finstrument-functions -fPIC. */
volatile double shape_sink;

__attribute__((noinline)) double shape_square(double s)
{
	shape_sink = s;
	return s * s;
}

__attribute__((noinline)) double shape_rect(double w, double h)
{
	shape_sink = w;
	return w * h;
}

__attribute__((noinline)) double shape_total(int n)
{
	double t = 0;
	for (int i = 0; i < n; i++)
		t += shape_square(i) + shape_rect(i, 2);
	return t;
}
