// cxx.cpp - namespaces, a class with a constructor and methods, a function
// template instantiated for int and double, a name with a comma in it.
#include <cstdio>

namespace geo {

class Shape {
public:
	Shape(double w, double h);
	double area() const;
	void scale(double fx, double fy);
private:
	double w_, h_;
};

__attribute__((noinline)) Shape::Shape(double w, double h) : w_(w), h_(h) {}

__attribute__((noinline)) double Shape::area() const { return w_ * h_; }

__attribute__((noinline)) void Shape::scale(double fx, double fy)
{
	w_ *= fx;
	h_ *= fy;
}

template <typename T> __attribute__((noinline)) T twice(T x)
{
	volatile T v = x;
	return v + v;
}

} // namespace geo

volatile double sink;

int main()
{
	geo::Shape s(2.0, 3.0);
	for (int i = 0; i < 4; i++) {
		s.scale(1.5, 0.5);
		sink = s.area();
	}
	sink = s.area();
	int a = 0;
	for (int i = 0; i < 7; i++)
		a += geo::twice<int>(i);
	double d = 0;
	for (int i = 0; i < 2; i++)
		d += geo::twice<double>(i * 0.5);
	std::printf("cxx %d %g\n", a, d);
	return 0;
}
