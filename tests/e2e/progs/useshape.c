/* useshape.c - calls libshape.so: shape_total once (4 squares, 4 rects),
 * then shape_square 3 more times. */
#include <stdio.h>

double shape_square(double s);
double shape_total(int n);

__attribute__((noinline)) double use_shapes(void)
{
	double t = shape_total(4);
	for (int i = 0; i < 3; i++)
		t += shape_square(i);
	return t;
}

int main(void)
{
	printf("useshape %g\n", use_shapes());
	return 0;
}
